//! A debuginfod client (elfutils' protocol): files by build-id from the servers
//! `DEBUGINFOD_URLS` names (space-separated, tried in order), kept in the client cache
//! elfutils uses (`DEBUGINFOD_CACHE_PATH`, else `$XDG_CACHE_HOME/debuginfod_client`, else
//! `~/.cache/debuginfod_client`; `BUILDID/debuginfo`, `BUILDID/executable`,
//! `BUILDID/section-NAME`), each server given `DEBUGINFOD_TIMEOUT` seconds (default 90)
//! to connect and to start answering. A file is written to a temporary name and renamed
//! when whole, so the cache never holds half a file. HTTP is `ureq`'s.
//!
//! What a file holds is the caller's to check (a db is validated and its build-id
//! compared by the resolver); [`Client::forget`] removes a file that failed that check.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

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
}

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// No server has it.
    #[error("no debuginfod server has the {what} of build-id {build_id} (asked {servers})")]
    NotFound {
        /// What was asked for.
        what: String,
        /// The build-id, hex.
        build_id: String,
        /// The servers asked.
        servers: String,
    },
    /// A server failed (refused, timed out, broke off).
    #[error("debuginfod server {server}: {error} (the {what} of build-id {build_id})")]
    Server {
        /// The server.
        server: String,
        /// What was asked for.
        what: String,
        /// The build-id, hex.
        build_id: String,
        /// What went wrong.
        error: String,
    },
    /// The cache could not be written.
    #[error("debuginfod cache {path}: {error}")]
    Cache {
        /// The file.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
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

/// [`Client::fetch`] reporting to the progress hook.
pub fn fetch_reporting(
    client: &Client,
    build_id: &[u8],
    what: What<'_>,
) -> Result<PathBuf, FetchError> {
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

/// The client.
#[derive(Debug, Clone)]
pub struct Client {
    urls: Vec<String>,
    timeout: Duration,
    cache: PathBuf,
}

/// Lowercase hex of `b`.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl Client {
    /// The client the environment configures, `None` when it names no server
    /// (`DEBUGINFOD_URLS` unset or empty) or `offline`.
    pub fn from_env(offline: bool) -> Option<Client> {
        if offline {
            return None;
        }
        let urls: Vec<String> = std::env::var("DEBUGINFOD_URLS")
            .ok()?
            .split_whitespace()
            .map(|u| u.trim_end_matches('/').to_string())
            .filter(|u| !u.is_empty())
            .collect();
        if urls.is_empty() {
            return None;
        }
        let timeout = std::env::var("DEBUGINFOD_TIMEOUT")
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
            .filter(|&t| t > 0)
            .unwrap_or(90);
        let cache = match std::env::var_os("DEBUGINFOD_CACHE_PATH") {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => match std::env::var_os("XDG_CACHE_HOME") {
                Some(x) if !x.is_empty() => PathBuf::from(x).join("debuginfod_client"),
                _ => PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()))
                    .join(".cache/debuginfod_client"),
            },
        };
        Some(Client {
            urls,
            timeout: Duration::from_secs(timeout),
            cache,
        })
    }

    /// The servers, as configured.
    pub fn servers(&self) -> &[String] {
        &self.urls
    }

    /// Where `what` of `build_id` is kept in the cache.
    pub fn cache_path(&self, build_id: &[u8], what: What<'_>) -> PathBuf {
        self.cache.join(hex(build_id)).join(what.cache_name())
    }

    /// `what` of `build_id`: the cached file, else the first server's that has it.
    pub fn fetch(
        &self,
        build_id: &[u8],
        what: What<'_>,
        progress: Progress<'_>,
    ) -> Result<PathBuf, FetchError> {
        let path = self.cache_path(build_id, what);
        if path.is_file() {
            return Ok(path);
        }
        let id = hex(build_id);
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_connect(Some(self.timeout))
            .timeout_recv_response(Some(self.timeout))
            .timeout_recv_body(Some(self.timeout * 20))
            .http_status_as_error(false)
            .build()
            .into();
        let mut last_error = None;
        for server in &self.urls {
            let url = format!("{server}/buildid/{id}/{}", what.url_path());
            log::debug!("debuginfod: GET {url}");
            let err = |error: String| FetchError::Server {
                server: server.clone(),
                what: what.url_path(),
                build_id: id.clone(),
                error,
            };
            let resp = match agent.get(&url).call() {
                Ok(r) => r,
                Err(e) => {
                    last_error = Some(err(e.to_string()));
                    continue;
                }
            };
            match resp.status().as_u16() {
                200 => {}
                404 => continue,
                s => {
                    last_error = Some(err(format!("HTTP {s}")));
                    continue;
                }
            }
            let total = resp
                .headers()
                .get("content-length")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            match self.save(&path, resp.into_body().into_reader(), total, progress) {
                Ok(()) => return Ok(path),
                Err(SaveError::Cache(e)) => return Err(e),
                Err(SaveError::Body(e)) => last_error = Some(err(e)),
            }
        }
        Err(last_error.unwrap_or(FetchError::NotFound {
            what: what.url_path(),
            build_id: id,
            servers: self.urls.join(" "),
        }))
    }

    /// Write a body to `path` through a temporary file, checking its length.
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
        let tmp = dir.join(format!(
            ".{}.part-{}",
            path.file_name().unwrap_or_default().to_string_lossy(),
            std::process::id()
        ));
        let mut f = std::fs::File::create(&tmp).map_err(cache)?;
        let mut buf = vec![0u8; 1 << 16];
        let mut got = 0u64;
        let result = loop {
            match body.read(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    if let Err(e) = f.write_all(&buf[..n]) {
                        break Err(cache(e));
                    }
                    got += n as u64;
                    progress(got, total);
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
        drop(f);
        match result {
            Ok(()) => std::fs::rename(&tmp, path).map_err(cache),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// Remove a cached file whose contents failed the caller's check.
    pub fn forget(&self, build_id: &[u8], what: What<'_>) {
        let _ = std::fs::remove_file(self.cache_path(build_id, what));
    }
}

enum SaveError {
    Cache(FetchError),
    Body(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_layout() {
        let c = Client {
            urls: vec!["http://127.0.0.1:1".into()],
            timeout: Duration::from_secs(1),
            cache: PathBuf::from("/c"),
        };
        assert_eq!(
            c.cache_path(&[0xab, 0x01], What::Section(".dcg_sigdb")),
            PathBuf::from("/c/ab01/section-.dcg_sigdb")
        );
        assert_eq!(
            c.cache_path(&[1], What::Debuginfo),
            PathBuf::from("/c/01/debuginfo")
        );
    }
}
