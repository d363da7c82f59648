//! `vh5 payload`: summarise payload files.
pub fn run(_args: &[String]) -> i32 {
    eprintln!("vh5 payload: not built yet");
    1
}
