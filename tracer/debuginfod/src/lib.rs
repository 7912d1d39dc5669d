//! A debuginfod client (elfutils' protocol): files by build-id from the servers
//! `DEBUGINFOD_URLS` names (space-separated, tried in order), kept in the client cache
//! elfutils uses (`DEBUGINFOD_CACHE_PATH`, else `$XDG_CACHE_HOME/debuginfod_client`, else
//! `~/.cache/debuginfod_client`; `BUILDID/debuginfo`, `BUILDID/executable`,
//! `BUILDID/section-NAME`). HTTP is `ureq`'s.
//!
//! As elfutils' client does:
//! - `DEBUGINFOD_URLS` unset (as under `sudo`): the servers of `/etc/debuginfod/*.urls`
//!   when the system's `/etc/profile.d/debuginfod.sh` (or `.csh`) is installed, i.e. when
//!   a login shell would have set them; set but empty: no server.
//! - `DEBUGINFOD_TIMEOUT` seconds (default 90; zero or negative: none) to connect and to
//!   start answering, and a server must send at least 100 KiB within every such period
//!   (a server that sends nothing for that long, or trickles, is dropped).
//! - An empty cached file is a remembered miss: while younger than the cache's
//!   `cache_miss_s` (600 s by default) nobody is asked; older, it is removed and the
//!   servers are asked again. A cached file this process cannot read is removed. When
//!   every server answers 404, an empty file records the miss.
//!
//! A file is written to an unnamed temporary file and put in place when whole
//! (`dcg-outfile`), so the cache never holds half a file. A server that failed to answer (connection, timeout, a broken or
//! too slow transfer) is not asked again by the same client. What a file holds is the
//! caller's to check; [`Client::forget`] removes a file that failed that check.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What to fetch for a build-id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What<'a> {
    /// The separate debug file (`/buildid/ID/debuginfo`).
    Debuginfo,
    /// The executable itself (`/buildid/ID/executable`).
    Executable,
    /// One ELF section of the debuginfo or executable (`/buildid/ID/section/NAME`).
    Section(&'a str),
}

impl What<'_> {
    fn url_path(&self) -> String {
        match self {
            What::Debuginfo => "debuginfo".into(),
            What::Executable => "executable".into(),
            What::Section(n) => format!("section/{n}"),
        }
    }

    fn cache_name(&self) -> String {
        match self {
            What::Debuginfo => "debuginfo".into(),
            What::Executable => "executable".into(),
            What::Section(n) => format!("section-{n}"),
        }
    }

    /// How a message names it: "the debug file", "the .dcg_sigdb section".
    pub fn describe(&self) -> String {
        match self {
            What::Debuginfo => "the debug file".into(),
            What::Executable => "the executable".into(),
            What::Section(n) => format!("the {n} section"),
        }
    }
}

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// No server has it (every server answered 404, or a recent miss is cached).
    #[error("no debuginfod server has {what} of build-id {build_id} ({})", .why)]
    NotFound {
        /// What was asked for.
        what: String,
        /// The build-id, hex.
        build_id: String,
        /// "asked URL ...", or the cached miss that answered instead.
        why: String,
    },
    /// No server had it and at least one failed to answer (refused, timed out, broke
    /// off, answered an HTTP error).
    #[error("{} ({what} of build-id {build_id})", failures_text(.failures, .not_found))]
    Failed {
        /// What was asked for.
        what: String,
        /// The build-id, hex.
        build_id: String,
        /// Each failing server and what went wrong.
        failures: Vec<(String, String)>,
        /// The servers that answered 404.
        not_found: Vec<String>,
    },
    /// The cache could not be written.
    #[error("debuginfod cache {}: {error}", .path.display())]
    Cache {
        /// The file.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
}

impl FetchError {
    /// What the servers said, without naming the file and the build-id (for a message
    /// that names them once for several fetches).
    pub fn reason(&self) -> String {
        match self {
            FetchError::NotFound { why, .. } => format!("no server has it ({why})"),
            FetchError::Failed {
                failures,
                not_found,
                ..
            } => failures_text(failures, not_found),
            FetchError::Cache { .. } => self.to_string(),
        }
    }
}

fn failures_text(failures: &[(String, String)], not_found: &[String]) -> String {
    let mut parts: Vec<String> = failures
        .iter()
        .map(|(s, e)| format!("debuginfod server {s}: {e}"))
        .collect();
    if !not_found.is_empty() {
        parts.push(format!("{} had none", not_found.join(" ")));
    }
    parts.join("; ")
}

/// Progress of a download: bytes so far, and the whole size when the server said.
pub type Progress<'a> = &'a mut dyn FnMut(u64, Option<u64>);

/// A download's progress, for whoever shows it: the URL, bytes so far, the whole size
/// when the server said it, and whether it is done.
pub type ProgressHook = dyn Fn(&str, u64, Option<u64>, bool) + Send + Sync;

static HOOK: std::sync::OnceLock<Box<ProgressHook>> = std::sync::OnceLock::new();

/// Have every download report its progress to `hook` (a binary draws a bar with it;
/// libraries only report). Set once.
pub fn set_progress_hook(hook: Box<ProgressHook>) {
    let _ = HOOK.set(hook);
}

/// A file fetched: where it is in the cache, and the server it came from (`None`: it
/// was in the cache already).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The cache file.
    pub path: PathBuf,
    /// The server that sent it, `None` when the cache had it.
    pub server: Option<String>,
}

/// [`Client::fetch`] reporting to the progress hook.
pub fn fetch_reporting(
    client: &Client,
    build_id: &[u8],
    what: What<'_>,
) -> Result<Fetched, FetchError> {
    let label = format!("{} of {}", what.url_path(), hex(build_id));
    let mut report = |got: u64, total: Option<u64>| {
        if let Some(h) = HOOK.get() {
            h(&label, got, total, false);
        }
    };
    let r = client.fetch(build_id, what, &mut report);
    if let Some(h) = HOOK.get() {
        h(&label, 0, None, true);
    }
    r
}

/// The least a server must send in every `DEBUGINFOD_TIMEOUT` seconds (elfutils' rule).
pub const MIN_BYTES_PER_TIMEOUT: u64 = 100 * 1024;

/// How long elfutils' client remembers a miss when the cache's `cache_miss_s` does not
/// say.
const CACHE_MISS_DEFAULT_S: u64 = 600;

/// The client.
#[derive(Debug, Clone)]
pub struct Client {
    urls: Vec<String>,
    timeout: Option<Duration>,
    cache: PathBuf,
    /// Servers that failed to answer, with what went wrong: not asked again.
    dead: Arc<Mutex<HashMap<String, String>>>,
}

/// Lowercase hex of `b`.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// What a cache file says.
enum Cached {
    /// A whole file.
    Hit,
    /// A remembered miss, this old.
    Miss(Duration),
    /// Nothing (or a stale miss, now removed).
    Absent,
}

impl Client {
    /// The client the variables configure (`DEBUGINFOD_URLS`, `DEBUGINFOD_TIMEOUT`,
    /// `DEBUGINFOD_CACHE_PATH`, `XDG_CACHE_HOME`, `HOME`), read through `var` (a binary
    /// passes `std::env::var_os`), `None` when they name no server. `DEBUGINFOD_URLS`
    /// unset: the system's servers under `etc` (normally `/etc`), as a login shell gets
    /// them (see the crate's documentation).
    pub fn configure(var: impl Fn(&str) -> Option<OsString>, etc: &Path) -> Option<Client> {
        let set = |v: &str| var(v).filter(|x| !x.is_empty());
        let urls_text = match var("DEBUGINFOD_URLS") {
            Some(u) => u.to_string_lossy().into_owned(),
            None => system_urls(etc)?,
        };
        let urls: Vec<String> = urls_text
            .split_whitespace()
            // elfutils' IMA policy words (`ima:enforcing`) are not servers.
            .filter(|u| !u.starts_with("ima:"))
            .map(|u| u.trim_end_matches('/').to_string())
            .filter(|u| !u.is_empty())
            .collect();
        if urls.is_empty() {
            return None;
        }
        let timeout = match set("DEBUGINFOD_TIMEOUT")
            .and_then(|t| t.to_string_lossy().trim().parse::<i64>().ok())
        {
            Some(t) if t <= 0 => None,
            Some(t) => Some(Duration::from_secs(t as u64)),
            None => Some(Duration::from_secs(90)),
        };
        let cache = match set("DEBUGINFOD_CACHE_PATH") {
            Some(p) => PathBuf::from(p),
            None => match set("XDG_CACHE_HOME") {
                Some(x) => PathBuf::from(x).join("debuginfod_client"),
                None => PathBuf::from(set("HOME").unwrap_or_else(|| "/root".into()))
                    .join(".cache/debuginfod_client"),
            },
        };
        Some(Client {
            urls,
            timeout,
            cache,
            dead: Arc::default(),
        })
    }

    /// The servers, as configured.
    pub fn servers(&self) -> &[String] {
        &self.urls
    }

    /// Whether some server has not failed yet (is still worth asking).
    pub fn any_server_left(&self) -> bool {
        let dead = self.dead.lock().unwrap_or_else(|e| e.into_inner());
        self.urls.iter().any(|u| !dead.contains_key(u))
    }

    /// Where `what` of `build_id` is kept in the cache.
    pub fn cache_path(&self, build_id: &[u8], what: What<'_>) -> PathBuf {
        self.cache.join(hex(build_id)).join(what.cache_name())
    }

    /// How long a cached miss counts: the cache's `cache_miss_s`, else 600 s.
    fn cache_miss(&self) -> Duration {
        let s = std::fs::read_to_string(self.cache.join("cache_miss_s"))
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(CACHE_MISS_DEFAULT_S);
        Duration::from_secs(s)
    }

    /// What the cache holds at `path`; removes a stale or unreadable miss.
    fn cached(&self, path: &Path) -> Cached {
        match std::fs::File::open(path).and_then(|f| f.metadata()) {
            Ok(m) if !m.is_file() => Cached::Absent,
            Ok(m) if m.len() > 0 => Cached::Hit,
            Ok(m) => {
                // A clock set back makes a miss young: it still counts, as for elfutils.
                let age = m
                    .modified()
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .unwrap_or_default();
                if age <= self.cache_miss() {
                    return Cached::Miss(age);
                }
                log::debug!(
                    "debuginfod: {} is a stale miss, asking again",
                    path.display()
                );
                let _ = std::fs::remove_file(path);
                Cached::Absent
            }
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                // Old elfutils recorded misses as files no one may read.
                log::debug!("debuginfod: {} is unreadable, asking again", path.display());
                let _ = std::fs::remove_file(path);
                Cached::Absent
            }
            Err(_) => Cached::Absent,
        }
    }

    /// `what` of `build_id`: the cached file, else the first server's that has it.
    pub fn fetch(
        &self,
        build_id: &[u8],
        what: What<'_>,
        progress: Progress<'_>,
    ) -> Result<Fetched, FetchError> {
        let path = self.cache_path(build_id, what);
        let id = hex(build_id);
        match self.cached(&path) {
            Cached::Hit => {
                return Ok(Fetched { path, server: None });
            }
            Cached::Miss(age) => {
                return Err(FetchError::NotFound {
                    what: what.describe(),
                    build_id: id,
                    why: format!(
                        "a miss remembered {} s ago in {}; servers {}",
                        age.as_secs(),
                        path.display(),
                        self.urls.join(" ")
                    ),
                })
            }
            Cached::Absent => {}
        }
        let mut cfg = ureq::Agent::config_builder().http_status_as_error(false);
        if let Some(t) = self.timeout {
            cfg = cfg
                .timeout_resolve(Some(t))
                .timeout_connect(Some(t))
                .timeout_recv_response(Some(t))
                .timeout_per_read(Some(t));
        }
        let agent: ureq::Agent = cfg.build().into();
        let mut failures = Vec::new();
        let mut not_found = Vec::new();
        for server in &self.urls {
            let earlier = self
                .dead
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(server)
                .cloned();
            if let Some(e) = earlier {
                failures.push((server.clone(), format!("{e} (not asked again)")));
                continue;
            }
            let url = format!("{server}/buildid/{id}/{}", what.url_path());
            log::debug!("debuginfod: GET {url}");
            let mut dead = |e: String| {
                self.dead
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(server.clone(), e.clone());
                failures.push((server.clone(), e));
            };
            let resp = match agent.get(&url).call() {
                Ok(r) => r,
                Err(e) => {
                    dead(e.to_string());
                    continue;
                }
            };
            match resp.status().as_u16() {
                200 => {}
                404 => {
                    not_found.push(server.clone());
                    continue;
                }
                s => {
                    failures.push((server.clone(), format!("HTTP {s}")));
                    continue;
                }
            }
            let total = resp
                .headers()
                .get("content-length")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            match self.save(&path, resp.into_body().into_reader(), total, progress) {
                Ok(()) => {
                    return Ok(Fetched {
                        path,
                        server: Some(server.clone()),
                    })
                }
                Err(SaveError::Cache(e)) => return Err(e),
                Err(SaveError::Body(e)) => dead(e),
            }
        }
        if failures.is_empty() {
            self.remember_miss(&path);
            return Err(FetchError::NotFound {
                what: what.describe(),
                build_id: id,
                why: format!("asked {}", self.urls.join(" ")),
            });
        }
        Err(FetchError::Failed {
            what: what.describe(),
            build_id: id,
            failures,
            not_found,
        })
    }

    /// Every server answered 404: an empty file says so to the next client (elfutils'
    /// negative cache).
    fn remember_miss(&self, path: &Path) {
        let made = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(path)
            });
        if let Err(e) = made {
            log::debug!("debuginfod: cannot record the miss {}: {e}", path.display());
        }
    }

    /// Write a body to `path` through a temporary file, checking its length and that it
    /// keeps coming (see [`MIN_BYTES_PER_TIMEOUT`]).
    fn save(
        &self,
        path: &Path,
        mut body: impl Read,
        total: Option<u64>,
        progress: Progress<'_>,
    ) -> Result<(), SaveError> {
        let dir = path
            .parent()
            .expect("cache files are in a build-id directory");
        let cache = |error| {
            SaveError::Cache(FetchError::Cache {
                path: path.to_path_buf(),
                error,
            })
        };
        std::fs::create_dir_all(dir).map_err(cache)?;
        // Replaced whole or not at all, nothing in the directory followed.
        let mut f = dcg_outfile::Output::replace(path).map_err(|e| cache(e.into_os_error()))?;
        let mut buf = vec![0u8; 1 << 16];
        let mut got = 0u64;
        // Bytes since the current period began.
        let (mut since, mut in_period) = (Instant::now(), 0u64);
        let result = loop {
            match body.read(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    if let Err(e) = f.write_all(&buf[..n]) {
                        break Err(cache(dcg_outfile::into_error(path, e).into_os_error()));
                    }
                    got += n as u64;
                    in_period += n as u64;
                    progress(got, total);
                    if let Some(t) = self.timeout {
                        if since.elapsed() >= t {
                            if in_period < MIN_BYTES_PER_TIMEOUT {
                                break Err(SaveError::Body(format!(
                                    "too slow: {in_period} bytes in {} s, under the 100 KiB \
                                     per DEBUGINFOD_TIMEOUT ({} s) a server must send \
                                     ({got} bytes in all)",
                                    since.elapsed().as_secs(),
                                    t.as_secs()
                                )));
                            }
                            (since, in_period) = (Instant::now(), 0);
                        }
                    }
                }
                Err(e) if is_timeout(&e) => {
                    break Err(SaveError::Body(format!(
                        "timeout: nothing came for {} s (DEBUGINFOD_TIMEOUT) after {got} bytes",
                        self.timeout.unwrap_or_default().as_secs()
                    )))
                }
                Err(e) => {
                    break Err(SaveError::Body(format!(
                        "the answer was cut short after {got} bytes ({e})"
                    )))
                }
            }
        };
        let result = result.and_then(|()| match total {
            Some(t) if t != got => Err(SaveError::Body(format!(
                "the answer was cut short ({got} of {t} bytes)"
            ))),
            _ => Ok(()),
        });
        // Dropped uncommitted, the file leaves nothing behind.
        result?;
        f.commit().map_err(|e| cache(e.into_os_error()))
    }

    /// Remove a cached file whose contents failed the caller's check.
    pub fn forget(&self, build_id: &[u8], what: What<'_>) {
        let _ = std::fs::remove_file(self.cache_path(build_id, what));
    }
}

/// The servers a login shell would get when `DEBUGINFOD_URLS` is unset: those of
/// `ETC/debuginfod/*.urls`, when the system's `ETC/profile.d/debuginfod.sh` (or `.csh`),
/// which sets them, is installed (Debian installs it only when the administrator chose
/// to use debuginfod).
fn system_urls(etc: &Path) -> Option<String> {
    let profile = etc.join("profile.d");
    if !["debuginfod.sh", "debuginfod.csh"]
        .iter()
        .any(|f| profile.join(f).exists())
    {
        return None;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(etc.join("debuginfod"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "urls")
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    files.sort();
    let urls: Vec<String> = files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .collect();
    let urls = urls.join(" ");
    log::debug!(
        "debuginfod: DEBUGINFOD_URLS is unset; the system's ({}): {urls}",
        etc.join("debuginfod/*.urls").display()
    );
    Some(urls)
}

/// Whether a body read failed for want of data in time.
fn is_timeout(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::TimedOut
        || e.get_ref()
            .and_then(|i| i.downcast_ref::<ureq::Error>())
            .is_some_and(|u| matches!(u, ureq::Error::Timeout(_)))
}

enum SaveError {
    Cache(FetchError),
    Body(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(cache: &Path) -> Client {
        Client {
            urls: vec!["http://127.0.0.1:1".into()],
            timeout: Some(Duration::from_secs(1)),
            cache: cache.to_path_buf(),
            dead: Arc::default(),
        }
    }

    #[test]
    fn cache_layout() {
        let c = client(Path::new("/c"));
        assert_eq!(
            c.cache_path(&[0xab, 0x01], What::Section(".dcg_sigdb")),
            PathBuf::from("/c/ab01/section-.dcg_sigdb")
        );
        assert_eq!(
            c.cache_path(&[1], What::Debuginfo),
            PathBuf::from("/c/01/debuginfo")
        );
    }

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |v| {
            vars.iter()
                .find(|(k, _)| *k == v)
                .map(|(_, x)| OsString::from(x))
        }
    }

    /// `DEBUGINFOD_URLS` unset: the system's `*.urls` only when its profile script (which
    /// a login shell runs) is installed; empty: none; set: those.
    #[test]
    fn servers_from_the_system_when_unset() {
        let etc = tempfile::tempdir().unwrap();
        let e = etc.path();
        std::fs::create_dir_all(e.join("debuginfod")).unwrap();
        std::fs::write(
            e.join("debuginfod/elfutils.urls"),
            "https://debuginfod.example.org\n",
        )
        .unwrap();
        std::fs::write(e.join("debuginfod/b.urls"), "http://b/ ima:permissive\n").unwrap();
        std::fs::write(e.join("debuginfod/.hidden.urls"), "http://hidden\n").unwrap();
        std::fs::write(e.join("debuginfod/notes.txt"), "http://txt\n").unwrap();
        let home = [("HOME", "/h")];
        // Debian without the administrator's consent: no profile script, no server.
        assert!(Client::configure(env(&home), e).is_none());
        std::fs::create_dir_all(e.join("profile.d")).unwrap();
        std::fs::write(e.join("profile.d/debuginfod.sh"), "").unwrap();
        let c = Client::configure(env(&home), e).unwrap();
        assert_eq!(
            c.servers(),
            ["http://b", "https://debuginfod.example.org"].as_slice()
        );
        assert_eq!(c.cache, PathBuf::from("/h/.cache/debuginfod_client"));
        assert_eq!(c.timeout, Some(Duration::from_secs(90)));
        // Set, even empty, it wins.
        let empty = [("DEBUGINFOD_URLS", "")];
        assert!(Client::configure(env(&empty), e).is_none());
        let own = [
            ("DEBUGINFOD_URLS", "http://a:1/"),
            ("DEBUGINFOD_TIMEOUT", "0"),
            ("DEBUGINFOD_CACHE_PATH", "/cp"),
        ];
        let c = Client::configure(env(&own), e).unwrap();
        assert_eq!(c.servers(), ["http://a:1"].as_slice());
        assert_eq!(c.timeout, None, "zero: no timeout, as for elfutils");
        assert_eq!(c.cache, PathBuf::from("/cp"));
    }

    /// An empty cached file is a miss while younger than `cache_miss_s`: the servers are
    /// not asked (here one that would refuse); older, it is removed and they are.
    #[test]
    fn remembered_misses() {
        let dir = tempfile::tempdir().unwrap();
        let c = client(dir.path());
        let id = [0xab, 0xcd];
        let what = What::Section(".dcg_sigdb");
        let path = c.cache_path(&id, what);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"").unwrap();
        let err = c.fetch(&id, what, &mut |_, _| {}).unwrap_err();
        assert!(
            matches!(&err, FetchError::NotFound { why, .. } if why.contains("a miss remembered")),
            "{err}"
        );
        assert!(c.any_server_left(), "no server was asked");
        // Older than cache_miss_s: asked again (and the server refuses).
        std::fs::write(dir.path().join("cache_miss_s"), "0\n").unwrap();
        let old = std::time::SystemTime::now() - Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let err = c.fetch(&id, what, &mut |_, _| {}).unwrap_err();
        assert!(matches!(err, FetchError::Failed { .. }), "{err}");
        assert!(!path.exists(), "the stale miss is gone");
        assert!(!c.any_server_left(), "the refusing server is dropped");
        // A whole file is a hit.
        std::fs::write(&path, b"x").unwrap();
        let got = c.fetch(&id, what, &mut |_, _| {}).unwrap();
        assert_eq!(got, Fetched { path, server: None });
    }
}
