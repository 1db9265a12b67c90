//! The body of `POST /api/import/{format}` (docs/import.md, "The request"), checked.

use base64ct::Encoding as _;
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::import::text::Encoding;
use crate::model::validate::{self, Invalid};
use crate::vault::{Secret, MAX_PASSWORD_BYTES};

/// At most this many files in one import (Remmina keeps one file per profile).
pub const MAX_FILES: usize = 20_000;
/// A file's name: 1 to this many bytes.
const MAX_FILE_NAME_BYTES: usize = 255;

/// One file of the body: its text (`content`) or its bytes (`content_base64`).
pub struct RequestFile {
    pub name: String,
    pub text: Option<String>,
    pub bytes: Vec<u8>,
}

pub struct ImportRequest {
    pub files: Vec<RequestFile>,
    pub import_secrets: bool,
    pub encoding: Encoding,
    pub parent_group_id: Option<String>,
    pub dry_run: bool,
}

/// Takes `passphrase` out of the body into a secret: `null` or absent is none; else 1 to
/// 1,024 bytes of text. The refusal never quotes it.
pub fn take_passphrase(body: &mut Map<String, Value>) -> Result<Option<Secret>, ApiError> {
    match body.remove("passphrase") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if !text.is_empty() && text.len() <= MAX_PASSWORD_BYTES => {
            Ok(Some(Secret::from_string(text)))
        }
        Some(_) => Err(ApiError::validation(
            "passphrase",
            format!("must be null or a string of 1 to {MAX_PASSWORD_BYTES} bytes"),
        )),
    }
}

impl ImportRequest {
    pub fn from_json(body: &Map<String, Value>) -> Result<ImportRequest, Invalid> {
        let files = match body.get("files") {
            Some(Value::Array(files)) if !files.is_empty() && files.len() <= MAX_FILES => files
                .iter()
                .enumerate()
                .map(|(index, file)| file_of(index, file))
                .collect::<Result<Vec<_>, _>>()?,
            _ => {
                return Err(Invalid::new(
                    "files",
                    format!("is required: an array of 1 to {MAX_FILES} files"),
                ))
            }
        };
        let import_secrets = match body.get("secrets") {
            None | Some(Value::Null) => false,
            Some(Value::String(text)) if text == "skip" => false,
            Some(Value::String(text)) if text == "import" => true,
            Some(_) => return Err(Invalid::new("secrets", "must be \"skip\" or \"import\"")),
        };
        let encoding = match body.get("encoding") {
            None | Some(Value::Null) => Encoding::Auto,
            Some(Value::String(name)) => Encoding::from_name(name).ok_or_else(encoding_rule)?,
            Some(_) => return Err(encoding_rule()),
        };
        let parent_group_id = match body.get("parent_group_id") {
            None => None,
            Some(value) => validate::optional_id("parent_group_id", value)?,
        };
        let dry_run = match body.get("dry_run") {
            None | Some(Value::Null) => false,
            Some(value) => validate::boolean("dry_run", value)?,
        };
        Ok(ImportRequest {
            files,
            import_secrets,
            encoding,
            parent_group_id,
            dry_run,
        })
    }
}

fn encoding_rule() -> Invalid {
    Invalid::new(
        "encoding",
        "must be \"auto\", \"utf-8\", \"utf-16\", \"windows-1252\" or \"gbk\"",
    )
}

/// `{"name", "content"}` or `{"name", "content_base64"}`, nothing else.
fn file_of(index: usize, value: &Value) -> Result<RequestFile, Invalid> {
    let field = |name: &str| format!("files[{index}].{name}");
    let Value::Object(file) = value else {
        return Err(Invalid::new(
            &format!("files[{index}]"),
            "must be an object with name and content or content_base64",
        ));
    };
    let name = match file.get("name") {
        Some(Value::String(name)) if !name.is_empty() && name.len() <= MAX_FILE_NAME_BYTES => {
            name.clone()
        }
        _ => {
            return Err(Invalid::new(
                &field("name"),
                format!("is required: 1 to {MAX_FILE_NAME_BYTES} bytes of text"),
            ))
        }
    };
    match (file.get("content"), file.get("content_base64")) {
        (Some(Value::String(text)), None) => Ok(RequestFile {
            name,
            text: Some(text.clone()),
            bytes: Vec::new(),
        }),
        (None, Some(Value::String(encoded))) => {
            let bytes = base64ct::Base64::decode_vec(encoded).map_err(|_| {
                Invalid::new(&field("content_base64"), "must be standard padded base64")
            })?;
            Ok(RequestFile {
                name,
                text: None,
                bytes,
            })
        }
        _ => Err(Invalid::new(
            &format!("files[{index}]"),
            "needs exactly one of content (text) or content_base64 (base64 text)",
        )),
    }
}
