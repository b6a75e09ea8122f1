//! Writes the seed corpus of every fuzz target to `<dir>/<target>/` (default `fuzz/seeds`),
//! for `cargo fuzz run <target> <corpus> <dir>/<target>`.

use std::path::PathBuf;

fn main() {
    let dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("fuzz/seeds"));
    for (target, _) in nrt_fuzz::TARGETS {
        let d = dir.join(target);
        if let Err(e) = std::fs::create_dir_all(&d) {
            eprintln!("nrt-fuzz-seeds: creating {}: {e}", d.display());
            std::process::exit(1);
        }
        let seeds = nrt_fuzz::seeds::seeds(target);
        for (name, bytes) in &seeds {
            if let Err(e) = std::fs::write(d.join(name), bytes) {
                eprintln!("nrt-fuzz-seeds: writing {name}: {e}");
                std::process::exit(1);
            }
        }
        println!("{target}: {} seeds in {}", seeds.len(), d.display());
    }
}
