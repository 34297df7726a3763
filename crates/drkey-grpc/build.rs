//! Compiles the DRKey protos with protox (pure Rust, no system protoc) and tonic's prost
//! generator (client and server).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = [
        "proto/drkey/v1/drkey.proto",
        "proto/control_plane/v1/drkey.proto",
    ];
    for f in files {
        println!("cargo:rerun-if-changed={f}");
    }
    let fds = protox::compile(files, ["."])?;
    tonic_prost_build::configure().compile_fds(fds)?;
    Ok(())
}
