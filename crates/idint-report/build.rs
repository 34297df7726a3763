//! Compiles `proto/` with protox (pure Rust, no system protoc) and prost.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let file = "proto/idint/report/v1/report.proto";
    println!("cargo:rerun-if-changed={file}");
    let fds = protox::compile([file], ["proto"])?;
    prost_build::Config::new().compile_fds(fds)?;
    Ok(())
}
