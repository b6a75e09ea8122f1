//! A schema-less reader of protobuf wire format (docs/profile.md §3.1): a message is a list of
//! (field number, value) pairs; every length and offset is checked against the bytes it
//! claims, so a malformed message is an [`NtffError`], never a panic.

use crate::error::NtffError;

/// One field value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2, with the file offset of its first byte.
    Bytes(&'a [u8], u64),
    /// Wire type 5.
    Fixed32(u32),
}

/// One decoded field.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field<'a> {
    /// Field number.
    pub num: u64,
    /// Its value.
    pub value: Value<'a>,
}

/// A decoded message: its fields in file order.
#[derive(Debug, Clone)]
pub(crate) struct Message<'a> {
    fields: Vec<Field<'a>>,
    /// File offset of the message's first byte.
    offset: u64,
    /// What the message is, for errors.
    context: String,
}

fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some(v);
        }
    }
    None
}

impl<'a> Message<'a> {
    /// Decodes `bytes`, which start at file offset `offset`.
    pub fn parse(bytes: &'a [u8], offset: u64, context: &str) -> Result<Message<'a>, NtffError> {
        let err = |at: usize, problem: &str| NtffError::Protobuf {
            context: context.to_string(),
            offset: offset + at as u64,
            problem: problem.to_string(),
        };
        let mut fields = Vec::new();
        let mut at = 0usize;
        while at < bytes.len() {
            let start = at;
            let key = varint(bytes, &mut at).ok_or_else(|| err(start, "truncated field key"))?;
            let num = key >> 3;
            if num == 0 {
                return Err(err(start, "field number 0"));
            }
            let value = match key & 7 {
                0 => Value::Varint(
                    varint(bytes, &mut at).ok_or_else(|| err(start, "truncated varint"))?,
                ),
                1 => {
                    let b = bytes
                        .get(at..at + 8)
                        .ok_or_else(|| err(start, "truncated 64-bit value"))?;
                    at += 8;
                    Value::Fixed64(u64::from_le_bytes(b.try_into().expect("8 bytes")))
                }
                2 => {
                    let n = varint(bytes, &mut at).ok_or_else(|| err(start, "truncated length"))?;
                    let end = usize::try_from(n)
                        .ok()
                        .and_then(|n| at.checked_add(n))
                        .filter(|&e| e <= bytes.len())
                        .ok_or_else(|| {
                            err(
                                start,
                                &format!(
                                    "field {num}: length {n} runs past the message end ({} bytes left)",
                                    bytes.len() - at
                                ),
                            )
                        })?;
                    let v = Value::Bytes(&bytes[at..end], offset + at as u64);
                    at = end;
                    v
                }
                5 => {
                    let b = bytes
                        .get(at..at + 4)
                        .ok_or_else(|| err(start, "truncated 32-bit value"))?;
                    at += 4;
                    Value::Fixed32(u32::from_le_bytes(b.try_into().expect("4 bytes")))
                }
                w => {
                    return Err(err(
                        start,
                        &format!("field {num}: unsupported wire type {w}"),
                    ))
                }
            };
            fields.push(Field { num, value });
        }
        Ok(Message {
            fields,
            offset,
            context: context.to_string(),
        })
    }

    fn wrong_type(&self, num: u64, want: &str) -> NtffError {
        NtffError::Protobuf {
            context: self.context.clone(),
            offset: self.offset,
            problem: format!("field {num} is not {want}"),
        }
    }

    /// The last value of integer field `num` (absent: `None`).
    pub fn uint(&self, num: u64) -> Result<Option<u64>, NtffError> {
        let mut out = None;
        for f in self.fields.iter().filter(|f| f.num == num) {
            out = Some(match f.value {
                Value::Varint(v) | Value::Fixed64(v) => v,
                Value::Fixed32(v) => u64::from(v),
                Value::Bytes(..) => return Err(self.wrong_type(num, "an integer")),
            });
        }
        Ok(out)
    }

    /// Integer field `num`, 0 when absent (protobuf's default).
    pub fn uint_or0(&self, num: u64) -> Result<u64, NtffError> {
        Ok(self.uint(num)?.unwrap_or(0))
    }

    /// Every bytes value of field `num`, with its file offset.
    pub fn all_bytes(&self, num: u64) -> Result<Vec<(&'a [u8], u64)>, NtffError> {
        self.fields
            .iter()
            .filter(|f| f.num == num)
            .map(|f| match f.value {
                Value::Bytes(b, off) => Ok((b, off)),
                _ => Err(self.wrong_type(num, "length-delimited")),
            })
            .collect()
    }

    /// The last bytes value of field `num`.
    pub fn bytes(&self, num: u64) -> Result<Option<&'a [u8]>, NtffError> {
        Ok(self.all_bytes(num)?.last().map(|(b, _)| *b))
    }

    /// Field `num` as text (lossy UTF-8), empty when absent.
    pub fn text(&self, num: u64) -> Result<String, NtffError> {
        Ok(self
            .bytes(num)?
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default())
    }

    /// Every sub-message of field `num`, decoded.
    pub fn messages(&self, num: u64, context: &str) -> Result<Vec<Message<'a>>, NtffError> {
        self.all_bytes(num)?
            .into_iter()
            .map(|(b, off)| Message::parse(b, off, context))
            .collect()
    }

    /// The last sub-message of field `num`.
    pub fn message(&self, num: u64, context: &str) -> Result<Option<Message<'a>>, NtffError> {
        Ok(self.messages(num, context)?.pop())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_four_wire_types() {
        // 1: varint 150; 2: "ab"; 3: fixed32 7; 4: fixed64 9.
        let b = [
            0x08, 0x96, 0x01, 0x12, 2, b'a', b'b', 0x1d, 7, 0, 0, 0, 0x21, 9, 0, 0, 0, 0, 0, 0, 0,
        ];
        let m = Message::parse(&b, 0, "t").unwrap();
        assert_eq!(m.uint(1).unwrap(), Some(150));
        assert_eq!(m.text(2).unwrap(), "ab");
        assert_eq!(m.uint(3).unwrap(), Some(7));
        assert_eq!(m.uint(4).unwrap(), Some(9));
        assert_eq!(m.uint(5).unwrap(), None);
        assert!(m.uint(2).is_err());
        assert!(m.bytes(1).is_err());
    }

    #[test]
    fn malformed_messages_are_errors() {
        for bad in [
            &[0x08][..],       // varint missing
            &[0x12, 5, 1][..], // length past end
            &[0x0b][..],       // group (wire type 3)
            &[0x00, 0x01][..], // field 0
            &[
                0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
            ][..],
            &[0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f][..],
        ] {
            assert!(Message::parse(bad, 0, "t").is_err(), "{bad:?}");
        }
    }
}
