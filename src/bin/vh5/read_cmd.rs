//! `vh5 info` and `vh5 read`.
pub fn run_info(_args: &[String]) -> i32 {
    eprintln!("vh5 info: not built yet");
    1
}
pub fn run_read(_args: &[String]) -> i32 {
    eprintln!("vh5 read: not built yet");
    1
}
