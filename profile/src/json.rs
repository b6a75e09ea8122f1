//! Writing and reading the profile JSON (docs/profile.md §2.2).
//!
//! The writer produces what neuron-profile's exporter produces: one compact JSON object, the
//! model's arrays under the device files' key names, and numbers in the text form of Go's
//! `encoding/json` — a float whose value is an integer is written without a fraction (`0`,
//! `1`), a float below 1e-6 or from 1e21 on in exponent form without zero padding
//! (`4.23528e-7`), every other float in shortest decimal form (`0.000038091607`). A reader of
//! a device file therefore reads a written file unchanged, down to the numbers' JSON types.
//!
//! The reader accepts any JSON object with those arrays: keys the model does not hold are
//! skipped, missing ones take their defaults, a value of the wrong type is an error naming
//! the key.

use std::io::Write;
use std::path::Path;

use serde::Serialize;
use serde_json::ser::Formatter;

use crate::error::ProfileError;
use crate::model::Profile;

/// serde_json formatter writing floats as Go's `encoding/json` does; everything else in
/// serde_json's compact form (the device files are compact).
#[derive(Debug, Default, Clone, Copy)]
pub struct GoFloatFormatter;

/// Go's `encoding/json` text of a float: shortest round-trip digits; exponent form when the
/// magnitude is non-zero and below 1e-6 or at least 1e21, with an explicit `+` on a positive
/// exponent and no zero padding; plain decimal otherwise, without a fraction when there is
/// none. `digits_e` and `digits_f` are Rust's shortest `{:e}` and `{}` forms of the value.
fn go_float(abs: f64, digits_e: String, digits_f: String) -> String {
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        match digits_e.split_once('e') {
            Some((mant, exp)) if !exp.starts_with('-') => format!("{mant}e+{exp}"),
            _ => digits_e,
        }
    } else {
        digits_f
    }
}

/// The Go `encoding/json` text of a 64-bit float (finite).
pub fn format_f64(v: f64) -> String {
    go_float(v.abs(), format!("{v:e}"), format!("{v}"))
}

/// The Go `encoding/json` text of a 32-bit float (finite).
pub fn format_f32(v: f32) -> String {
    go_float(f64::from(v.abs()), format!("{v:e}"), format!("{v}"))
}

impl Formatter for GoFloatFormatter {
    fn write_f64<W: ?Sized + Write>(&mut self, writer: &mut W, value: f64) -> std::io::Result<()> {
        writer.write_all(format_f64(value).as_bytes())
    }

    fn write_f32<W: ?Sized + Write>(&mut self, writer: &mut W, value: f32) -> std::io::Result<()> {
        writer.write_all(format_f32(value).as_bytes())
    }
}

/// Writes `profile` as neuron-profile JSON to `out`.
pub fn write<W: Write>(profile: &Profile, out: W) -> Result<(), ProfileError> {
    let mut ser = serde_json::Serializer::with_formatter(out, GoFloatFormatter);
    profile.serialize(&mut ser).map_err(ProfileError::Json)
}

/// `profile` as neuron-profile JSON text.
pub fn to_string(profile: &Profile) -> String {
    let mut buf = Vec::new();
    // Writing to a Vec cannot fail, and every float the model holds is written as a number
    // (serde_json writes a non-finite one as `null`), so serialisation has no error path.
    write(profile, &mut buf).expect("serialising a profile into memory cannot fail");
    String::from_utf8(buf).expect("serde_json writes UTF-8")
}

/// Reads neuron-profile JSON text.
pub fn from_str(text: &str) -> Result<Profile, ProfileError> {
    serde_json::from_str(text).map_err(ProfileError::Json)
}

/// Reads neuron-profile JSON bytes.
pub fn from_slice(bytes: &[u8]) -> Result<Profile, ProfileError> {
    serde_json::from_slice(bytes).map_err(ProfileError::Json)
}

/// Reads a neuron-profile JSON file; errors name the file.
pub fn read_file(path: &Path) -> Result<Profile, ProfileError> {
    let bytes = std::fs::read(path).map_err(|source| ProfileError::Io {
        path: path.display().to_string(),
        source,
    })?;
    from_slice(&bytes).map_err(|e| e.in_file(path))
}

/// Writes `profile` as neuron-profile JSON to the file `path`.
pub fn write_file(profile: &Profile, path: &Path) -> Result<(), ProfileError> {
    let io = |source| ProfileError::Io {
        path: path.display().to_string(),
        source,
    };
    let file = std::fs::File::create(path).map_err(io)?;
    let mut out = std::io::BufWriter::new(file);
    write(profile, &mut out)?;
    out.flush().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_as_go_writes_them() {
        // The forms the device files show.
        assert_eq!(format_f64(4.23528e-7), "4.23528e-7");
        assert_eq!(format_f64(1.1708217e-05), "0.000011708217");
        assert_eq!(format_f64(0.0), "0");
        assert_eq!(format_f64(1.0), "1");
        assert_eq!(format_f64(240.94117647058823), "240.94117647058823");
        assert_eq!(format_f64(0.5), "0.5");
        assert_eq!(format_f64(1e21), "1e+21");
        assert_eq!(format_f64(-2.5e-9), "-2.5e-9");
        assert_eq!(format_f64(1e-6), "0.000001");
        assert_eq!(format_f32(8_533_333_500.0), "8533333500");
        assert_eq!(format_f32(26_177_542_000.0), "26177542000");
    }
}
