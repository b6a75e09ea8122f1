//! The path-aware JSON cursor every manifest parser reads through: a value with the file and
//! key path it was found at ([`At`]), an object likewise ([`Obj`]), and the typed accessors
//! whose errors name the file and the key path (`sg00/def.json: var.a.var_id: missing`). Also
//! the manifests' one size limit, [`MAX_BYTES`].

use nrt_hal::Dtype;
use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// Largest byte count, offset or element count the manifests may carry (2^40 = 1 TiB). Larger
/// numbers are rejected as invalid, so later arithmetic on them cannot overflow.
pub const MAX_BYTES: u64 = 1 << 40;

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_u64() || n.is_i64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

pub(super) fn parse_root(file: &str, bytes: &[u8]) -> Result<Map<String, Value>> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| {
        Error::invalid(format!(
            "{file}: malformed JSON at line {} column {}: {e}",
            e.line(),
            e.column()
        ))
    })?;
    match v {
        Value::Object(m) => Ok(m),
        other => Err(Error::invalid(format!(
            "{file}: expected a JSON object at the top level, got {}",
            type_name(&other)
        ))),
    }
}

/// A JSON value together with the file and key path it was found at.
#[derive(Clone, Copy)]
pub(super) struct At<'a> {
    pub(super) file: &'a str,
    pub(super) path: &'a str,
    pub(super) value: &'a Value,
}

fn err_at(file: &str, path: &str, what: impl std::fmt::Display) -> Error {
    if path.is_empty() {
        Error::invalid(format!("{file}: {what}"))
    } else {
        Error::invalid(format!("{file}: {path}: {what}"))
    }
}

impl<'a> At<'a> {
    pub(super) fn err(&self, what: impl std::fmt::Display) -> Error {
        err_at(self.file, self.path, what)
    }

    fn wrong(&self, expected: &str) -> Error {
        self.err(format_args!(
            "expected {expected}, got {}",
            type_name(self.value)
        ))
    }

    pub(super) fn str(&self) -> Result<&'a str> {
        self.value.as_str().ok_or_else(|| self.wrong("string"))
    }

    pub(super) fn u64(&self) -> Result<u64> {
        match self.value {
            Value::Number(n) => n
                .as_u64()
                .ok_or_else(|| self.err(format_args!("expected unsigned integer, got {n}"))),
            _ => Err(self.wrong("unsigned integer")),
        }
    }

    /// An unsigned integer no larger than [`MAX_BYTES`].
    pub(super) fn bytes(&self) -> Result<u64> {
        let v = self.u64()?;
        if v > MAX_BYTES {
            return Err(self.err(format_args!("{v} exceeds the limit of {MAX_BYTES}")));
        }
        Ok(v)
    }

    pub(super) fn u32(&self) -> Result<u32> {
        let v = self.u64()?;
        u32::try_from(v).map_err(|_| self.err(format_args!("{v} does not fit in 32 bits")))
    }

    pub(super) fn i64(&self) -> Result<i64> {
        match self.value {
            Value::Number(n) => n
                .as_i64()
                .ok_or_else(|| self.err(format_args!("expected integer, got {n}"))),
            _ => Err(self.wrong("integer")),
        }
    }

    pub(super) fn f64(&self) -> Result<f64> {
        self.value.as_f64().ok_or_else(|| self.wrong("number"))
    }

    /// A string holding an unsigned integer, or an unsigned integer.
    pub(super) fn str_or_u64(&self) -> Result<u64> {
        match self.value {
            Value::String(s) => s.trim().parse::<u64>().map_err(|_| {
                self.err(format_args!(
                    "expected an unsigned integer string, got {s:?}"
                ))
            }),
            Value::Number(_) => self.u64(),
            _ => Err(self.wrong("integer string")),
        }
    }

    pub(super) fn obj(&self) -> Result<Obj<'a>> {
        match self.value {
            Value::Object(m) => Ok(Obj {
                file: self.file,
                path: self.path.to_string(),
                map: m,
            }),
            _ => Err(self.wrong("object")),
        }
    }

    pub(super) fn arr(&self) -> Result<&'a [Value]> {
        match self.value {
            Value::Array(a) => Ok(a),
            _ => Err(self.wrong("array")),
        }
    }

    /// Applies `f` to every element of an array, with the element's path.
    pub(super) fn each<T>(&self, mut f: impl FnMut(At<'_>) -> Result<T>) -> Result<Vec<T>> {
        let a = self.arr()?;
        let mut out = Vec::with_capacity(a.len());
        for (i, v) in a.iter().enumerate() {
            let path = format!("{}[{i}]", self.path);
            out.push(f(At {
                file: self.file,
                path: &path,
                value: v,
            })?);
        }
        Ok(out)
    }
}

/// A JSON object with its file and key path.
pub(super) struct Obj<'a> {
    pub(super) file: &'a str,
    pub(super) path: String,
    pub(super) map: &'a Map<String, Value>,
}

impl<'a> Obj<'a> {
    pub(super) fn root(file: &'a str, map: &'a Map<String, Value>) -> Self {
        Obj {
            file,
            path: String::new(),
            map,
        }
    }

    fn key_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    pub(super) fn err(&self, key: &str, what: impl std::fmt::Display) -> Error {
        err_at(self.file, &self.key_path(key), what)
    }

    /// Runs `f` on the value of `key` if present (and not null).
    pub(super) fn opt<T>(
        &self,
        key: &str,
        f: impl FnOnce(At<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => {
                let path = self.key_path(key);
                f(At {
                    file: self.file,
                    path: &path,
                    value: v,
                })
                .map(Some)
            }
        }
    }

    /// Runs `f` on the value of `key`, which must be present.
    pub(super) fn req<T>(&self, key: &str, f: impl FnOnce(At<'_>) -> Result<T>) -> Result<T> {
        self.opt(key, f)?.ok_or_else(|| self.err(key, "missing"))
    }

    pub(super) fn req_str(&self, key: &str) -> Result<String> {
        self.req(key, |a| a.str().map(str::to_string))
    }

    pub(super) fn opt_str(&self, key: &str) -> Result<Option<String>> {
        self.opt(key, |a| a.str().map(str::to_string))
    }

    pub(super) fn opt_u32(&self, key: &str) -> Result<Option<u32>> {
        self.opt(key, |a| a.u32())
    }

    pub(super) fn opt_bytes(&self, key: &str) -> Result<Option<u64>> {
        self.opt(key, |a| a.bytes())
    }

    /// The sub-object at `key` (required).
    pub(super) fn req_obj(&self, key: &str) -> Result<Obj<'a>> {
        match self.map.get(key) {
            None | Some(Value::Null) => Err(self.err(key, "missing")),
            Some(Value::Object(m)) => Ok(Obj {
                file: self.file,
                path: self.key_path(key),
                map: m,
            }),
            Some(v) => Err(self.err(key, format_args!("expected object, got {}", type_name(v)))),
        }
    }

    /// The sub-object at `key`, if present.
    pub(super) fn opt_obj(&self, key: &str) -> Result<Option<Obj<'a>>> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.req_obj(key).map(Some),
        }
    }

    /// The entries of this object, each with its own path.
    pub(super) fn entries(&self) -> impl Iterator<Item = (&'a String, At<'_>, String)> + '_ {
        self.map.iter().map(move |(k, v)| {
            let path = self.key_path(k);
            (
                k,
                At {
                    file: self.file,
                    path: "",
                    value: v,
                },
                path,
            )
        })
    }
}

/// Runs `f` on `at` re-rooted at `path` (used with [`Obj::entries`]).
pub(super) fn with_path<T>(
    at: At<'_>,
    path: &str,
    f: impl FnOnce(At<'_>) -> Result<T>,
) -> Result<T> {
    f(At {
        file: at.file,
        path,
        value: at.value,
    })
}

pub(super) fn u64_list(a: At<'_>) -> Result<Vec<u64>> {
    a.each(|e| e.u64())
}

pub(super) fn bytes_list(a: At<'_>) -> Result<Vec<u64>> {
    a.each(|e| e.bytes())
}

pub(super) fn string_list(a: At<'_>) -> Result<Vec<String>> {
    a.each(|e| e.str().map(str::to_string))
}

pub(super) fn dtype_of(a: At<'_>) -> Result<Dtype> {
    let s = a.str()?;
    Dtype::from_neff_name(s).ok_or_else(|| a.err(format_args!("unknown dtype {s:?}")))
}
