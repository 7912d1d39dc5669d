//! Event formats as the kernel prints them in `events/<system>/<event>/format`:
//!
//! ```text
//! name: funcgraph_exit
//! ID: 10
//! format:
//!     field:unsigned short common_type;    offset:0;    size:2;    signed:0;
//!     ...
//!     field:unsigned long retval;    offset:16;    size:8;    signed:0;
//! ```

use crate::RingError;

/// One field of an event record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Name (`retval`, `args` for `unsigned long args[]`).
    pub name: String,
    /// Declared type, the name left out (`unsigned long`, `const void *`, `char` for
    /// `char comm[16]`).
    pub ty: String,
    /// Byte offset in the record.
    pub offset: usize,
    /// Size in bytes (0 for a trailing dynamic array).
    pub size: usize,
    /// Signed integer.
    pub signed: bool,
}

/// The layout of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    /// Event name.
    pub name: String,
    /// Event type id (`common_type` of its records).
    pub id: u16,
    /// Its fields, common ones included.
    pub fields: Vec<Field>,
}

impl Format {
    /// Parse one format file's text.
    pub fn parse(text: &str) -> Result<Format, RingError> {
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some(n) = line.strip_prefix("name:") {
                name = Some(n.trim().to_string());
            } else if let Some(i) = line.strip_prefix("ID:") {
                id = i.trim().parse::<u16>().ok();
            } else if let Some(f) = line.strip_prefix("field:") {
                if let Some(field) = parse_field(f) {
                    fields.push(field);
                }
            }
        }
        let name = name.unwrap_or_default();
        let bad = |what: &str| RingError::Format {
            event: name.clone(),
            what: what.to_string(),
        };
        let id = id.ok_or_else(|| bad("no ID"))?;
        if fields.is_empty() {
            return Err(bad("no fields"));
        }
        Ok(Format { name, id, fields })
    }

    /// Parse several formats, each starting at a `name:` line (one file after the other).
    pub fn parse_all(text: &str) -> Result<Vec<Format>, RingError> {
        let mut out = Vec::new();
        let mut chunk = String::new();
        for line in text.lines() {
            if line.starts_with("name:") && !chunk.is_empty() {
                out.push(Format::parse(&chunk)?);
                chunk.clear();
            }
            if line.starts_with("name:") || !chunk.is_empty() {
                chunk.push_str(line);
                chunk.push('\n');
            }
        }
        if !chunk.is_empty() {
            out.push(Format::parse(&chunk)?);
        }
        Ok(out)
    }

    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The field named `name`, or an error naming the event.
    pub fn require(&self, name: &str) -> Result<&Field, RingError> {
        self.field(name).ok_or_else(|| RingError::Format {
            event: self.name.clone(),
            what: format!("no field {name}"),
        })
    }
}

/// `unsigned long retval; offset:16; size:8; signed:0;`
fn parse_field(f: &str) -> Option<Field> {
    let mut parts = f.split(';').map(str::trim);
    let decl = parts.next()?;
    let mut offset = None;
    let mut size = None;
    let mut signed = false;
    for p in parts {
        if let Some(v) = p.strip_prefix("offset:") {
            offset = v.parse().ok();
        } else if let Some(v) = p.strip_prefix("size:") {
            size = v.parse().ok();
        } else if let Some(v) = p.strip_prefix("signed:") {
            signed = v == "1";
        }
    }
    // The name is the last word of the declaration, without an array suffix.
    let last = decl.rsplit([' ', '*']).next()?;
    let name = last.split('[').next()?.to_string();
    let ty = decl[..decl.len() - last.len()].trim().to_string();
    Some(Field {
        name,
        ty,
        offset: offset?,
        size: size?,
        signed,
    })
}

/// A little-endian unsigned value of `size` bytes (1, 2, 4, 8) at `offset` of `rec`.
pub fn read_uint(rec: &[u8], offset: usize, size: usize) -> Option<u64> {
    let b = rec.get(offset..offset + size)?;
    Some(match size {
        1 => u64::from(b[0]),
        2 => u64::from(u16::from_le_bytes([b[0], b[1]])),
        4 => u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        8 => u64::from_le_bytes(b.try_into().ok()?),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXIT: &str = "name: funcgraph_exit
ID: 10
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;
\tfield:unsigned long retval;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned long args[];\toffset:24;\tsize:0;\tsigned:0;

print fmt: \"<-- %ps\", (void *)REC->func
";

    #[test]
    fn parses_fields() {
        let f = Format::parse(EXIT).unwrap();
        assert_eq!((f.name.as_str(), f.id), ("funcgraph_exit", 10));
        assert_eq!(f.field("retval").map(|x| (x.offset, x.size)), Some((16, 8)));
        assert!(f.field("common_pid").unwrap().signed);
        assert_eq!(f.field("args").map(|x| (x.offset, x.size)), Some((24, 0)));
        assert_eq!(f.field("retval").unwrap().ty, "unsigned long");
        assert!(f.require("calltime").is_err());
        assert!(Format::parse("name: x\n").is_err());
        let two = format!("{EXIT}{}", EXIT.replace("ID: 10", "ID: 11"));
        assert_eq!(Format::parse_all(&two).unwrap().len(), 2);
    }
}
