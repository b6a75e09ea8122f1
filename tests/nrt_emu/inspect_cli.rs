//! `nrt-emu inspect` on zoo NEFFs: text and JSON describe the same facts.

fn run(args: &[&str]) -> (bool, String, String) {
    let r = crate::support::nrt_emu(args);
    (r.ok, r.stdout, r.stderr)
}

fn neff(name: &str) -> String {
    nrt_fixtures::fixtures_dir()
        .join("neffs")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn inspect_json_reports_header_io_vars_queues_and_engines() {
    let (ok, out, err) = run(&["inspect", &neff("lnc2_add.trn2.neff"), "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["header"]["lnc_size"], 2);
    assert_eq!(v["header"]["feature_bits"], "0xc00");
    assert_eq!(v["header"]["hash_algorithm"], "md5");
    assert_eq!(v["header"]["hash_verifies"], true);
    assert_eq!(v["target"], "cayman");
    assert_eq!(v["subgraphs"].as_array().unwrap().len(), 2);
    assert_eq!(
        v["outputs"].as_array().unwrap().len(),
        1,
        "LNC=2 duplicate output folded"
    );
    let sg0 = &v["subgraphs"][0];
    assert!(sg0["vars"]
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x["type"] == "state-buffer"));
    assert!(sg0["queue_sets"]
        .as_array()
        .unwrap()
        .iter()
        .all(|q| q["dma_blocks"].as_u64().unwrap() > 0));
    assert!(sg0["engines"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["engine"] == "SP"));
    assert!(v["members"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["name"] == "neff.json"));
}

#[test]
fn inspect_text_counts_real_opcodes_and_flags_a_bad_hash() {
    let (ok, out, err) = run(&["inspect", &neff("real_like.trn1.neff")]);
    assert!(ok, "{err}");
    assert!(out.contains("target sunda"), "{out}");
    assert!(out.contains("not executable here"), "{out}");
    assert!(out.contains("verifies"), "{out}");
    // Corrupt the stored hash: the NEFF still parses, the hash no longer verifies.
    let mut bytes = std::fs::read(neff("add.trn1.neff")).unwrap();
    let dir = std::env::temp_dir().join(format!("nrt-inspect-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("x.neff");
    bytes[0xAC] ^= 0xFF;
    std::fs::write(&f, &bytes).unwrap();
    let (ok, out, err) = run(&["inspect", f.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.contains("DOES NOT VERIFY"), "{out}");
    let (ok, _, err) = run(&["inspect", &neff("../malformed/tar_bad_checksum.neff")]);
    assert!(!ok);
    assert!(err.contains("NRT_INVALID"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
