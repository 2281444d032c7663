//! The credential a check's record is bound to, chosen from what the
//! kubeconfig's current user holds.
//!
//! The shim reports every candidate it found (an inline token, the token
//! file that in-cluster config points to, a client key inline or in a
//! file), with the files already read; this module picks one (a bearer
//! token before a client key: a token names the service account, which is
//! what the record is bound to), names where it came from (an error about
//! a bad token then says which token), and says why a named file gave no
//! credential. The shim hides every candidate from
//! error texts, chosen or not.

/// The current user's candidates, as the shim found them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserFacts {
    /// `user.token`, if it is a string (maybe empty).
    pub token: Option<String>,
    /// The auth provider's token file, if one is named.
    pub token_file: Option<CredentialFile>,
    /// `user.keyData`, decoded from base64, if it is a string.
    pub key_data: Option<Vec<u8>>,
    /// `user.keyFile`, if one is named.
    pub key_file: Option<CredentialFile>,
}

impl UserFacts {
    /// A user with an inline token and nothing else.
    pub fn token(token: &str) -> UserFacts {
        UserFacts {
            token: Some(token.to_string()),
            ..UserFacts::default()
        }
    }
}

/// A file named as a credential, and what reading it gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialFile {
    /// Its path; `None` when the kubeconfig named it with something other
    /// than a string.
    pub path: Option<String>,
    /// What reading it gave.
    pub read: FileRead,
}

/// What reading a credential file gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileRead {
    /// Its bytes.
    Bytes(Vec<u8>),
    /// Not a regular file (a directory, a FIFO): not read.
    NotRegular,
    /// Larger than the shim reads (a credential is a few KB).
    TooLarge,
    /// Reading failed with this error code (`ENOENT`, `EACCES`).
    Failed(String),
}

/// The chosen credential.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Credential {
    /// Its bytes (a bearer token or a client key); `None` when there is
    /// none to bind a record to.
    pub bytes: Option<Vec<u8>>,
    /// Where it came from, in words, for messages about a bad token.
    pub source: Option<String>,
    /// Why a credential the user names gave none (a file not read).
    pub warning: Option<String>,
}

impl Credential {
    /// The one `user` authenticates with: an inline token, else the token
    /// file, else the client key's data, else the client key file. A file
    /// that cannot be read gives no credential and a warning; an empty
    /// token or key data is no credential, and the next is looked at.
    pub fn of(user: &UserFacts) -> Credential {
        if let Some(token) = user.token.as_deref().filter(|t| !t.is_empty()) {
            return Credential {
                bytes: Some(token.as_bytes().to_vec()),
                source: Some("the kubeconfig's inline token".into()),
                warning: None,
            };
        }
        if let Some(file) = &user.token_file {
            let mut credential = read(file, "service-account token");
            credential.source = file.path.as_ref().map(|p| format!("the token file {p}"));
            return credential;
        }
        if let Some(key) = user.key_data.as_ref().filter(|k| !k.is_empty()) {
            return Credential {
                bytes: Some(key.clone()),
                ..Credential::default()
            };
        }
        match &user.key_file {
            Some(file) => read(file, "client key"),
            None => Credential::default(),
        }
    }
}

fn read(file: &CredentialFile, what: &str) -> Credential {
    let why = match &file.read {
        FileRead::Bytes(bytes) => {
            return Credential {
                bytes: Some(bytes.clone()),
                ..Credential::default()
            }
        }
        FileRead::NotRegular | FileRead::TooLarge => "is not a small regular file".to_string(),
        FileRead::Failed(code) => format!("cannot be read ({code})"),
    };
    let at = file
        .path
        .as_deref()
        .unwrap_or("a path that is not a string");
    Credential {
        warning: Some(format!(
            "the {what} at {at} {why}; the verdict will not be cached"
        )),
        ..Credential::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, read: FileRead) -> Option<CredentialFile> {
        Some(CredentialFile {
            path: Some(path.into()),
            read,
        })
    }

    fn bytes(b: &str) -> FileRead {
        FileRead::Bytes(b.as_bytes().to_vec())
    }

    #[test]
    fn an_inline_token_wins_over_every_file() {
        let user = UserFacts {
            token: Some("inline".into()),
            token_file: file("/run/token", bytes("from-file")),
            key_data: Some(b"key".to_vec()),
            key_file: file("/k", FileRead::Failed("ENOENT".into())),
        };
        let c = Credential::of(&user);
        assert_eq!(c.bytes.as_deref(), Some(&b"inline"[..]));
        assert_eq!(c.source.as_deref(), Some("the kubeconfig's inline token"));
        assert_eq!(c.warning, None);
    }

    #[test]
    fn an_empty_token_gives_way_to_the_token_file_which_is_named() {
        let user = UserFacts {
            token: Some(String::new()),
            token_file: file("/run/token", bytes("from-file")),
            key_data: Some(b"key".to_vec()),
            ..UserFacts::default()
        };
        let c = Credential::of(&user);
        assert_eq!(c.bytes.as_deref(), Some(&b"from-file"[..]));
        assert_eq!(c.source.as_deref(), Some("the token file /run/token"));
    }

    #[test]
    fn an_unreadable_token_file_is_no_credential_but_still_the_source() {
        let user = UserFacts {
            token_file: file("/run/token", FileRead::Failed("EACCES".into())),
            key_data: Some(b"key".to_vec()),
            ..UserFacts::default()
        };
        let c = Credential::of(&user);
        assert_eq!(c.bytes, None);
        assert_eq!(c.source.as_deref(), Some("the token file /run/token"));
        assert_eq!(
            c.warning.as_deref(),
            Some("the service-account token at /run/token cannot be read (EACCES); the verdict will not be cached")
        );
    }

    #[test]
    fn a_token_file_named_by_a_non_string_has_no_source() {
        let user = UserFacts {
            token_file: Some(CredentialFile {
                path: None,
                read: FileRead::Failed("ERR_INVALID_ARG_TYPE".into()),
            }),
            ..UserFacts::default()
        };
        let c = Credential::of(&user);
        assert_eq!(c.source, None);
        assert!(c
            .warning
            .unwrap()
            .contains("at a path that is not a string"));
    }

    #[test]
    fn the_client_key_comes_after_the_tokens_data_before_file_and_names_no_source() {
        let both = UserFacts {
            key_data: Some(b"inline-key".to_vec()),
            key_file: file("/k", bytes("file-key")),
            ..UserFacts::default()
        };
        let c = Credential::of(&both);
        assert_eq!(c.bytes.as_deref(), Some(&b"inline-key"[..]));
        assert_eq!(c.source, None);
        let file_only = UserFacts {
            key_data: Some(Vec::new()),
            key_file: file("/k", bytes("file-key")),
            ..UserFacts::default()
        };
        assert_eq!(
            Credential::of(&file_only).bytes.as_deref(),
            Some(&b"file-key"[..])
        );
    }

    #[test]
    fn a_key_file_that_is_not_a_small_regular_file_says_so() {
        for read in [FileRead::NotRegular, FileRead::TooLarge] {
            let user = UserFacts {
                key_file: file("/etc", read),
                ..UserFacts::default()
            };
            let c = Credential::of(&user);
            assert_eq!(c.bytes, None);
            assert_eq!(
                c.warning.as_deref(),
                Some("the client key at /etc is not a small regular file; the verdict will not be cached")
            );
        }
    }

    #[test]
    fn nothing_named_is_no_credential_and_no_warning() {
        assert_eq!(Credential::of(&UserFacts::default()), Credential::default());
    }
}
