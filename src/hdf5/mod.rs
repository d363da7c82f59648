//! libhdf5 access: process-wide lock, error-stack capture, RAII handles.
