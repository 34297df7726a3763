//! `idint-decode`: pretty-prints SCION / ID-INT packets layer by layer.
//!
//! Arguments: pcap files, raw SCION packets (`*.bin`, one packet per file) or directories of
//! them. `--write-demo FILE` writes a pcap with an ID-INT demo packet first. `--fields` prints
//! one JSON object per packet instead: every field as the Wireshark dissector
//! (`tools/wireshark/scion-idint.lua`) names it, and whether the packet is malformed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use idint_wire::pretty::PrettyPacket;
use wire_tools::pcap::{PcapReader, scion_payload};

#[derive(Default)]
struct Tally {
    decoded: usize,
    failed: usize,
    /// `--fields`: stdout carries JSON lines only, the tally goes to stderr.
    fields: bool,
}

fn main() -> ExitCode {
    match run() {
        Ok(t) => {
            if t.fields {
                eprintln!("{} decoded, {} failed", t.decoded, t.failed);
            } else {
                println!("{} decoded, {} failed", t.decoded, t.failed);
            }
            if t.failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("idint-decode: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<Tally> {
    let mut args = std::env::args_os().skip(1).peekable();
    let mut inputs = Vec::new();
    let mut wrote_demo = false;
    let mut fields = false;
    while let Some(a) = args.next() {
        match a.to_str() {
            Some("-h" | "--help") => {
                println!(
                    "usage: idint-decode [--write-demo FILE.pcap] [--fields] [PCAP|FILE.bin|DIR]...\n\
                     Pretty-prints every layer of each SCION packet (ID-INT included).\n\
                     --fields: one JSON line per packet with the dissector's field names."
                );
                return Ok(Tally::default());
            }
            Some("--fields") => fields = true,
            Some("--write-demo") => {
                let out = args.next().context("--write-demo needs a file name")?;
                let n = wire_tools::demo::write_demo_pcap(Path::new(&out))?;
                eprintln!("wrote {n} demo packets to {}", Path::new(&out).display());
                wrote_demo = true;
            }
            _ => inputs.push(PathBuf::from(a)),
        }
    }
    if inputs.is_empty() && wrote_demo {
        return Ok(Tally::default());
    }
    if inputs.is_empty() {
        bail!("no input: give pcap files, raw .bin packets or directories");
    }
    let mut tally = Tally {
        fields,
        ..Tally::default()
    };
    for input in inputs {
        decode_path(&input, fields, &mut tally)?;
    }
    Ok(tally)
}

fn decode_path(path: &Path, fields: bool, tally: &mut Tally) -> Result<()> {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("reading directory {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("bin" | "pcap")))
            .collect();
        entries.sort();
        for p in entries {
            decode_path(&p, fields, tally)?;
        }
        return Ok(());
    }
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let is_pcap = bytes.len() >= 4
        && matches!(
            u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            0xa1b2_c3d4 | 0xd4c3_b2a1 | 0xa1b2_3c4d | 0x4d3c_b2a1
        );
    if !is_pcap {
        if !fields {
            println!("=== {} ({} bytes)", path.display(), bytes.len());
        }
        print_packet(&bytes, fields, tally);
        return Ok(());
    }
    let mut reader = PcapReader::new(bytes.as_slice())
        .with_context(|| format!("reading pcap {}", path.display()))?;
    let mut index = 0;
    while let Some(rec) = reader
        .next_record()
        .with_context(|| format!("reading pcap {}", path.display()))?
    {
        index += 1;
        if !fields {
            println!("=== {} #{index} ({} bytes)", path.display(), rec.data.len());
        }
        match scion_payload(reader.link_type(), &rec.data) {
            Ok((underlay, scion)) => {
                if let (Some(s), Some(d)) = (underlay.src, underlay.dst)
                    && !fields
                {
                    println!("Underlay UDP {s} -> {d}");
                }
                print_packet(scion, fields, tally);
            }
            Err(e) => {
                if fields {
                    println!("{{\"malformed\":\"not a SCION packet\",\"fields\":[]}}");
                } else {
                    println!("  not a SCION packet: {e}");
                }
                tally.failed += 1;
            }
        }
    }
    Ok(())
}

fn print_packet(bytes: &[u8], fields: bool, tally: &mut Tally) {
    let pretty = PrettyPacket::new(bytes);
    let complete = if fields {
        let f = wire_tools::fields::decode(bytes);
        println!("{}", f.to_json());
        f.malformed.is_none()
    } else {
        print!("{pretty}");
        pretty.is_complete()
    };
    if complete {
        tally.decoded += 1;
    } else {
        tally.failed += 1;
    }
}
