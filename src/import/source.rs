//! What every reader of another tool's files makes of them (docs/import.md, "How a source
//! becomes hosts"): folders, hosts and credential objects as plain data, each with a stable
//! source id, every source field that was not mapped named, and passwords still in their
//! source's protected form. The import plan (`model::import_plan`) decides against the
//! stored catalogue from this alone, so a reader never touches the store or the vault.
//!
//! Invariants: pure data; a `SourceSecret` never derives `Debug` output of its value (the
//! protected forms print their kind only, `Plain` is a `vault::Secret`).

use std::fmt;

use crate::vault::Secret;

/// The sources `POST /api/import/{format}` reads (docs/import.md, "Formats").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    MobaXterm,
    Putty,
    WinScp,
    SecureCrt,
    MRemoteNg,
    Remmina,
    TermiusCsv,
    Csv,
}

impl Format {
    /// Every format, in the order `GET /api/import/formats` lists them.
    pub const ALL: [Format; 8] = [
        Format::MobaXterm,
        Format::Putty,
        Format::WinScp,
        Format::SecureCrt,
        Format::MRemoteNg,
        Format::Remmina,
        Format::TermiusCsv,
        Format::Csv,
    ];

    /// The name in the path (`/api/import/{format}`) and in `source.format`.
    pub fn name(self) -> &'static str {
        match self {
            Format::MobaXterm => "mobaxterm",
            Format::Putty => "putty",
            Format::WinScp => "winscp",
            Format::SecureCrt => "securecrt",
            Format::MRemoteNg => "mremoteng",
            Format::Remmina => "remmina",
            Format::TermiusCsv => "termius-csv",
            Format::Csv => "csv",
        }
    }

    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|format| format.name() == name)
    }
}

/// One file of the request, decoded to text (docs/import.md, "Encodings").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    /// The name the request gave it (a reader may pick files by it: `remmina.pref`).
    pub name: String,
    pub text: String,
}

/// A file a reader could not read at all: the import answers 400 `VALIDATION_ERROR` naming
/// `files[index]` and this reason (never a value from the file that could be a secret).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreadable {
    pub file: usize,
    pub reason: String,
}

/// Everything a reader found in the files.
#[derive(Debug, Default)]
pub struct Catalogue {
    /// Folders, each listed once, parents before children (a reader may list only the
    /// folders hosts sit in; the plan adds missing parents).
    pub groups: Vec<SourceGroup>,
    pub hosts: Vec<SourceHost>,
    /// Credential objects (MobaXterm `[:cred]`, SecureCRT credentials, a container's
    /// inherited username and password): each becomes an identity.
    pub identities: Vec<SourceIdentity>,
    /// A key the source keeps beside its sessions and its passwords need (Remmina's
    /// `remmina.pref` `secret`).
    pub source_key: Option<Secret>,
}

/// A folder: a group. Its path is its source id.
#[derive(Debug, Default)]
pub struct SourceGroup {
    /// Folder names from the top (`["Prod", "Web"]`), each as the source spells it.
    pub path: Vec<String>,
    /// What hosts below inherit (mRemoteNG containers whose connections say `Inherit*`).
    pub username: Option<String>,
    pub port: Option<u16>,
    /// The source id of the identity hosts below use.
    pub identity: Option<String>,
    pub unmapped: Vec<String>,
}

/// A saved session that connects over SSH (or one skipped, with why).
#[derive(Debug, Default)]
pub struct SourceHost {
    /// Stable across exports of the same source: the tool's own id (mRemoteNG `Id`) when it
    /// has one, else the folder path and session name joined with `/`.
    pub source_id: String,
    pub name: String,
    pub group_path: Vec<String>,
    pub hostname: String,
    /// `None`: not given (the built-in 22 or the group's default).
    pub port: Option<u16>,
    /// `None`: not given (inherited, else the import's default user).
    pub username: Option<String>,
    /// The source id of the identity this session uses (its username and password come
    /// from there).
    pub identity: Option<String>,
    pub auth: SourceAuth,
    /// The jump hosts in order, nearest to us first.
    pub jumps: Vec<Jump>,
    /// Forwards as OpenSSH directives (`LocalForward 8080 localhost:80`,
    /// `RemoteForward ...`, `DynamicForward 1080`), read by `model::forward`.
    pub forwards: Vec<String>,
    pub remote_command: Option<String>,
    /// `NAME=value` pairs sent with `SetEnv`.
    pub environment: Vec<(String, String)>,
    /// A detached OpenSSH certificate's path (PuTTY/WinSCP `DetachedCertificate`, Remmina
    /// `ssh_certfile`).
    pub certificate_file: Option<String>,
    pub tags: Vec<String>,
    pub notes: String,
    /// Source fields not mapped, each as `field: why` (`X11Forward: X11 forwarding is not
    /// imported`). Never a secret's value.
    pub unmapped: Vec<String>,
    /// `Some(reason)`: not an SSH session (`protocol RDP is not SSH`): reported `skipped`.
    pub skipped: Option<String>,
    /// `Some(reason)`: an SSH session that cannot become a host (no host name): `invalid`.
    pub invalid: Option<String>,
}

/// How a session logs in, as the source says.
#[derive(Debug, Default)]
pub enum SourceAuth {
    /// Not said: inherited, else the import's default (agent).
    #[default]
    Unspecified,
    Password(Option<SourceSecret>),
    /// A private key file's path as the source wrote it (a `.ppk` or OpenSSH file on the
    /// user's machine; the import cannot read it, so it is reported in `unmapped`).
    Key {
        path: String,
        passphrase: Option<SourceSecret>,
    },
    Agent,
}

/// One jump host of a session's chain.
#[derive(Debug)]
pub enum Jump {
    /// Another session of the same import, by its source id (PuTTY `ProxyHost` naming a
    /// saved session, SecureCRT `Firewall Name` = `Session:<path>`, mRemoteNG
    /// `SSHTunnelConnectionName`).
    Session(String),
    /// An address only: the plan finds or creates a host for it.
    Address {
        hostname: String,
        port: Option<u16>,
        username: Option<String>,
        password: Option<Box<SourceSecret>>,
    },
}

/// A credential object: an identity.
#[derive(Debug, Default)]
pub struct SourceIdentity {
    pub source_id: String,
    pub name: String,
    pub username: Option<String>,
    pub password: Option<SourceSecret>,
    pub unmapped: Vec<String>,
}

/// A password as the source keeps it. Revealed only with `secrets: "import"`, by
/// `import::reveal` (the source's own scheme, in `vault::foreign`).
pub enum SourceSecret {
    /// Stored in clear by the source (Termius CSV, our CSV, PuTTY `ProxyPassword`).
    Plain(Secret),
    /// WinSCP's scrambled hex; `key` is user name + host name, as WinSCP mixes them in.
    WinScp { hex: String, key: String },
    /// SecureCRT `Password V2`, `02:` or `03:` with hex after it (prefix included).
    SecureCrtV2(String),
    /// SecureCRT's older `Password` (`u` + hex, two Blowfish passes).
    SecureCrtV1(String),
    /// mRemoteNG's base64 (salt, nonce, AES-GCM ciphertext, tag); iterations from the root.
    MRemoteNg { base64: String, iterations: u32 },
    /// Remmina's base64 3DES; the key comes from `remmina.pref`'s `secret`.
    Remmina(String),
    /// A saved password no scheme here can open (WinSCP's master-password form), with why:
    /// reported `"missing"` with that reason.
    Unavailable(&'static str),
}

impl SourceSecret {
    /// The scheme's name for reasons and counts (`"winscp"`), never its value.
    pub fn scheme(&self) -> &'static str {
        match self {
            SourceSecret::Plain(_) => "plain",
            SourceSecret::WinScp { .. } => "winscp",
            SourceSecret::SecureCrtV2(_) => "securecrt-v2",
            SourceSecret::SecureCrtV1(_) => "securecrt-v1",
            SourceSecret::MRemoteNg { .. } => "mremoteng",
            SourceSecret::Remmina(_) => "remmina",
            SourceSecret::Unavailable(_) => "unavailable",
        }
    }
}

impl fmt::Debug for SourceSecret {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(out, "SourceSecret({}, redacted)", self.scheme())
    }
}
