//! The current user's credential candidates, as the shim reports them,
//! read field by field (see [`read_field`]).

use super::*;
use crate::credential::{CredentialFile, FileRead, UserFacts};
use crate::text::quoted;
use crate::wasm::de::read_field;

/// `{token?, tokenFile?, keyData? (a Uint8Array), keyFile?}`, or null.
pub fn user_facts(v: &JsValue) -> Result<UserFacts, Bad> {
    if v.is_null() || v.is_undefined() {
        return Ok(UserFacts::default());
    }
    if !v.is_object() {
        return Err(Bad::new("expected an object".into()));
    }
    let file = |key| -> Result<Option<CredentialFile>, Bad> {
        let file = field(v, key)?;
        if file.is_null() || file.is_undefined() {
            return Ok(None);
        }
        credential_file(&file).map(Some).map_err(|e| e.at(key))
    };
    Ok(UserFacts {
        token: read_field(v, "token")?,
        token_file: file("tokenFile")?,
        key_data: read_field::<Option<Bytes>>(v, "keyData")?.map(|b| b.0),
        key_file: file("keyFile")?,
    })
}

/// `{path (a string or null), type: 'read', bytes}`, `{path, type:
/// 'notRegular' | 'tooLarge'}` or `{path, type: 'failed', code}`.
fn credential_file(file: &JsValue) -> Result<CredentialFile, Bad> {
    let kind: String = read_field(file, "type")?;
    let read = match kind.as_str() {
        "read" => FileRead::Bytes(read_field::<Bytes>(file, "bytes")?.0),
        "notRegular" => FileRead::NotRegular,
        "tooLarge" => FileRead::TooLarge,
        "failed" => FileRead::Failed(read_field(file, "code")?),
        other => {
            return Err(Bad::new(format!(
                "{} (expected one of read, notRegular, tooLarge, failed)",
                quoted(other)
            ))
            .at("type"))
        }
    };
    Ok(CredentialFile {
        path: read_field(file, "path")?,
        read,
    })
}
