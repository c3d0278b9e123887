//! A real browser for tests: Debian's `chromium`, headless. Installed with apt-get when it is
//! missing (as root or through sudo, as `scripts/test` does); a test that needs it fails
//! loudly when it cannot be had, never skips.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

fn find() -> Option<PathBuf> {
    ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        })
    })
}

fn install() {
    let apt =
        "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium";
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout == b"0\n");
    let mut cmd = if matches!(root, Ok(true)) {
        Command::new("sh")
    } else {
        let mut c = Command::new("sudo");
        c.arg("-n").arg("sh");
        c
    };
    let _ = cmd
        .arg("-c")
        .arg(apt)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// The `chromium` binary, installing it once per test process if needed.
pub fn chromium() -> PathBuf {
    static PATH: OnceLock<Option<PathBuf>> = OnceLock::new();
    PATH.get_or_init(|| {
        find().or_else(|| {
            install();
            find()
        })
    })
    .clone()
    .expect("chromium is needed for the browser tests and could not be installed (apt-get install chromium)")
}

/// A headless chromium showing one page; killed (with its helper processes) when dropped.
pub struct Browser {
    child: Child,
    profile: PathBuf,
}

impl Browser {
    pub fn open(url: &str) -> Browser {
        let profile = std::env::temp_dir().join(format!("sv-chromium-{}", uuid::Uuid::new_v4()));
        let child = Command::new(chromium())
            .args([
                "--headless",
                // Tests run as root in containers, where the sandbox cannot start.
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--disable-extensions",
                "--disable-background-networking",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own group, so that dropping it ends its renderers too.
            .process_group(0)
            .spawn()
            .expect("start chromium");
        Browser { child, profile }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}
