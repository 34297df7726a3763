//! Replays a router case file (the `router_cases.json` format) through the processor:
//! `cargo run --release -p scion-dp-replay -- FILE` (binary `replay-cases`). Prints PASS or FAIL with
//! the first difference per case and `N passed, M failed`; exits 1 if any case fails, 2 if
//! the file cannot be read.

fn main() {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: replay-cases FILE (router_cases.json format)");
        std::process::exit(2);
    };
    let mut out = std::io::stdout();
    match scion_dp_replay::run_file(std::path::Path::new(&path), &mut out) {
        Ok((_, 0)) => {}
        Ok(_) => std::process::exit(1),
        Err(e) => {
            eprintln!("replay-cases: {e}");
            std::process::exit(2);
        }
    }
}
