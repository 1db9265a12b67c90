//! Bytes to text (placeholder until the shared reader lands).

/// How a file's bytes are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Auto,
    Utf8,
    Utf16,
    Windows1252,
    Gbk,
}

impl Encoding {
    pub fn from_name(name: &str) -> Option<Encoding> {
        match name {
            "auto" => Some(Encoding::Auto),
            "utf-8" => Some(Encoding::Utf8),
            "utf-16" => Some(Encoding::Utf16),
            "windows-1252" => Some(Encoding::Windows1252),
            "gbk" => Some(Encoding::Gbk),
            _ => None,
        }
    }
}

pub fn decode(bytes: &[u8], _encoding: Encoding) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| "is not UTF-8".to_owned())
}
