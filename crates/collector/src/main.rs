//! `idint-collector`: the collector service binary.

fn main() {}
