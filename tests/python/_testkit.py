"""Small helpers several test modules share (h5py filter keywords, threads)."""

import threading


def h5py_filter_kwargs(name):
    """``h5py.create_dataset`` keywords of a filter pipeline named as the tests name them:
    "gzip", "shuffle_gzip", "fletcher32"; anything else: no filter."""
    return {
        "gzip": {"compression": "gzip"},
        "shuffle_gzip": {"compression": "gzip", "shuffle": True},
        "fletcher32": {"fletcher32": True},
    }.get(name, {})


def run_threads(target, args):
    """Run ``target(*a)`` on one thread per entry of ``args``; return when all have ended
    (the caller collects their errors: an exception in a thread does not propagate)."""
    ts = [threading.Thread(target=target, args=a) for a in args]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
