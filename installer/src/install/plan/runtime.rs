//! containerd's effective configuration: what the plan expects of it, and the judging of what
//! `containerd config dump` prints on a node against that.
//!
//! kk writes `/etc/containerd/config.toml`, but containerd runs with the MERGE of that file, its
//! own defaults and every drop-in its `imports` name, and containerd 2.x also migrates older
//! config versions on the fly (containerd#12636, #12612: mirrors silently lost). So the install
//! reads back the merged config containerd itself prints and refuses to go on unless kk's
//! settings are the ones in force; a drop-in that overrides them is named.

use std::fmt;

use serde::Serialize;

use super::RegistryAuth;
use crate::install::error::PlanError;
use crate::install::render::kubernetes::CGROUP_DRIVER;
use crate::install::render::{containerd_major, paths};

#[cfg(test)]
mod tests;

/// What containerd's effective configuration must hold on every node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContainerdPlan {
    /// The bundle's containerd version.
    pub version: String,
    /// Its major version: 1 reads config version 2, 2 reads version 3.
    pub major: u32,
    /// The registry hosts directory (`config_path`): kk's mirrors.
    pub config_path: String,
    /// The sandbox (pause) image by its original name.
    pub sandbox_image: String,
    /// `SystemdCgroup` of the default runtime, following the kubelet's cgroup driver.
    pub systemd_cgroup: bool,
    /// Registry hosts whose `registry.configs` (credentials) the install itself writes; any
    /// other entry there, or any `registry.mirrors`, bypasses `config_path`.
    pub auth_hosts: Vec<String>,
}

impl ContainerdPlan {
    /// The expectations for containerd `version` with the bundle's `pause_image`.
    pub fn new(version: &str, pause_image: &str) -> Result<Self, PlanError> {
        let major = containerd_major(version).ok_or_else(|| PlanError::ContainerdVersion {
            version: version.to_owned(),
        })?;
        Ok(Self {
            version: version.to_owned(),
            major,
            config_path: paths::CERTS_D.to_owned(),
            sandbox_image: pause_image.to_owned(),
            systemd_cgroup: CGROUP_DRIVER == "systemd",
            auth_hosts: Vec::new(),
        })
    }

    /// The containerd runtime's expectations, `None` when the runtime is docker (its tarball
    /// carries its own containerd, set up by the docker step). The credentials the install
    /// writes (`registry_auth`) are the only `registry.configs` the effective config may have.
    pub(super) fn of_runtime(
        containerd_runtime: bool,
        version: &str,
        pause_image: &str,
        registry_auth: &[RegistryAuth],
    ) -> Result<Option<Self>, PlanError> {
        if !containerd_runtime {
            return Ok(None);
        }
        let mut plan = Self::new(version, pause_image)?;
        plan.auth_hosts = registry_auth.iter().map(|auth| auth.host.clone()).collect();
        Ok(Some(plan))
    }

    /// The settings of `dump` (what `containerd config dump` printed) that are not what kk
    /// expects; empty when containerd runs with kk's settings.
    pub fn judge(&self, dump: &str) -> Result<Vec<Finding>, toml::de::Error> {
        let dump: toml::Table = dump.parse()?;
        let layout = Layout::of(self.major);
        let mut findings = Vec::new();
        let mut expect = |setting: Setting, path: &[&str], expected: String| {
            let found = lookup(&dump, path);
            let matches = match found {
                Some(toml::Value::String(text)) => *text == expected,
                Some(toml::Value::Boolean(flag)) => flag.to_string() == expected,
                _ => false,
            };
            if !matches {
                let found = found.map_or_else(|| "(not set)".to_owned(), shown);
                findings.push(Finding::new(setting, path, found, expected));
            }
        };
        let config_path = layout.path(Setting::ConfigPath);
        expect(Setting::ConfigPath, &config_path, self.config_path.clone());
        let sandbox = layout.path(Setting::Sandbox);
        expect(Setting::Sandbox, &sandbox, self.sandbox_image.clone());
        let runtime = lookup(&dump, &layout.default_runtime())
            .and_then(toml::Value::as_str)
            .unwrap_or("runc");
        let cgroup = layout.systemd_cgroup(runtime);
        expect(
            Setting::SystemdCgroup,
            &cgroup,
            self.systemd_cgroup.to_string(),
        );
        for setting in [Setting::Mirrors, Setting::Configs, Setting::Auths] {
            let hosts: Vec<&String> = lookup(&dump, &layout.path(setting))
                .and_then(toml::Value::as_table)
                .map(|table| {
                    table
                        .keys()
                        .filter(|host| {
                            setting == Setting::Mirrors || !self.auth_hosts.contains(host)
                        })
                        .collect()
                })
                .unwrap_or_default();
            if !hosts.is_empty() {
                let allowed = if setting == Setting::Mirrors || self.auth_hosts.is_empty() {
                    "none".to_owned()
                } else {
                    format!("only {}", self.auth_hosts.join(", "))
                };
                let hosts: Vec<&str> = hosts.iter().map(|host| host.as_str()).collect();
                let path = layout.path(setting);
                findings.push(Finding::new(setting, &path, hosts.join(", "), allowed));
            }
        }
        Ok(findings)
    }
}

/// The `imports` of a dump: the drop-in files (or glob patterns) containerd merged.
pub fn imports(dump: &str) -> Vec<String> {
    dump.parse::<toml::Table>()
        .ok()
        .and_then(|table| table.get("imports").cloned())
        .and_then(|value| value.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|value| value.as_str().map(str::to_owned))
        .collect()
}

/// A setting kk owns in containerd's config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// The registry hosts directory.
    ConfigPath,
    /// The sandbox image.
    Sandbox,
    /// The runc runtime's cgroup driver.
    SystemdCgroup,
    /// `registry.mirrors`: mirrors that bypass `config_path`.
    Mirrors,
    /// `registry.configs`: per-host TLS and credentials beside `config_path`.
    Configs,
    /// `registry.auths`: containerd 1.x's deprecated credentials by host.
    Auths,
}

/// Where the CRI settings live in one config version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    /// The plugin holding the image settings.
    images: &'static str,
    /// The plugin holding the runtimes.
    runtime: &'static str,
    /// The sandbox image's path below the image plugin.
    sandbox: &'static [&'static str],
}

/// containerd 1.x, config version 2: one CRI plugin.
const V2: Layout = Layout {
    images: "io.containerd.grpc.v1.cri",
    runtime: "io.containerd.grpc.v1.cri",
    sandbox: &["sandbox_image"],
};

/// containerd 2.x, config version 3: the CRI plugin split into images and runtime.
const V3: Layout = Layout {
    images: "io.containerd.cri.v1.images",
    runtime: "io.containerd.cri.v1.runtime",
    sandbox: &["pinned_images", "sandbox"],
};

impl Layout {
    fn of(major: u32) -> Self {
        if major >= 2 { V3 } else { V2 }
    }

    fn path(self, setting: Setting) -> Vec<&'static str> {
        let registry = |key| vec!["plugins", self.images, "registry", key];
        match setting {
            Setting::ConfigPath => registry("config_path"),
            Setting::Mirrors => registry("mirrors"),
            Setting::Configs => registry("configs"),
            Setting::Auths => registry("auths"),
            Setting::Sandbox => [&["plugins", self.images][..], self.sandbox].concat(),
            Setting::SystemdCgroup => vec![
                "plugins",
                self.runtime,
                "containerd",
                "runtimes",
                "runc",
                "options",
                "SystemdCgroup",
            ],
        }
    }

    fn default_runtime(self) -> Vec<&'static str> {
        vec![
            "plugins",
            self.runtime,
            "containerd",
            "default_runtime_name",
        ]
    }

    /// `SystemdCgroup` of the runtime named `runtime` (the default runtime's, as the dump says).
    fn systemd_cgroup(self, runtime: &str) -> Vec<&str> {
        let mut path = self.path(Setting::SystemdCgroup);
        path[4] = runtime;
        path
    }
}

/// `path` in `table`.
fn lookup<'a>(table: &'a toml::Table, path: &[&str]) -> Option<&'a toml::Value> {
    let (last, parents) = path.split_last()?;
    let mut table = table;
    for key in parents {
        table = table.get(*key)?.as_table()?;
    }
    table.get(*last)
}

/// A TOML value as the operator wrote it (strings without quotes).
fn shown(value: &toml::Value) -> String {
    match value {
        toml::Value::String(text) => text.clone(),
        toml::Value::Table(table) => table.keys().cloned().collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// A TOML key path as containerd's docs spell it: `plugins."io.containerd.grpc.v1.cri".registry`.
fn dotted(path: &[&str]) -> String {
    path.iter()
        .map(|key| {
            if key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                (*key).to_owned()
            } else {
                format!("\"{key}\"")
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// One setting of the effective config that is not kk's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Which setting.
    pub setting: Setting,
    /// Its key in the dump.
    pub key: String,
    /// Its value there (the hosts, for mirrors and configs).
    pub found: String,
    /// What kk expects.
    pub expected: String,
    /// The drop-in that sets it, when one does.
    pub set_by: Option<SetBy>,
}

/// The drop-in behind a finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetBy {
    /// The file.
    pub file: String,
    /// What the file does: the value it sets, or that it replaces the plugin's whole table.
    pub how: String,
}

impl Finding {
    fn new(setting: Setting, path: &[&str], found: String, expected: String) -> Self {
        Self {
            setting,
            key: dotted(path),
            found,
            expected,
            set_by: None,
        }
    }

    /// Names the last of `files` (drop-ins in merge order: path, text) that sets this finding's
    /// setting, in either config version's spelling (containerd 2.x migrates version-2
    /// drop-ins); for containerd 1.x, which replaces a plugin's whole table with a drop-in's,
    /// the last drop-in with a table of the CRI plugin when none sets the key itself.
    pub fn attribute(&mut self, major: u32, files: &[(String, String)]) {
        let parsed: Vec<(&String, toml::Table)> = files
            .iter()
            .filter_map(|(file, text)| Some((file, text.parse::<toml::Table>().ok()?)))
            .collect();
        let sets = parsed.iter().rev().find_map(|(file, table)| {
            [V2, V3].iter().find_map(|layout| {
                let value = lookup(table, &layout.path(self.setting))?;
                Some(SetBy {
                    file: (*file).clone(),
                    how: format!(
                        "sets `{}` = `{}`",
                        dotted(&layout.path(self.setting)),
                        shown(value)
                    ),
                })
            })
        });
        self.set_by = sets.or_else(|| {
            (major < 2).then_some(())?;
            parsed.iter().rev().find_map(|(file, table)| {
                lookup(table, &["plugins", V2.images])?;
                Some(SetBy {
                    file: (*file).clone(),
                    how: format!(
                        "has its own `[{}]` table, which replaces kk's whole table in containerd 1.x",
                        dotted(&["plugins", V2.images])
                    ),
                })
            })
        });
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is `{}`, kk expects `{}`",
            self.key, self.found, self.expected
        )?;
        if let Some(set_by) = &self.set_by {
            write!(f, " (`{}` {})", set_by.file, set_by.how)?;
        }
        Ok(())
    }
}

/// The drop-in files a shell on the node lists for `imports` (patterns expanded), each printed
/// after a marker line; kk's own config is left out. Patterns with characters a shell would
/// treat specially are skipped.
pub fn imports_command(imports: &[String]) -> Option<String> {
    let patterns: Vec<String> = imports
        .iter()
        .filter(|p| {
            p.chars()
                .all(|c| c.is_ascii_alphanumeric() || "/._-*?+:@".contains(c))
        })
        .map(|p| {
            if p.starts_with('/') {
                p.clone()
            } else {
                // containerd resolves a relative import against its config file's directory.
                format!("/etc/containerd/{p}")
            }
        })
        .collect();
    if patterns.is_empty() {
        return None;
    }
    Some(format!(
        "for f in {}; do [ \"$f\" != {CONFIG} ] && [ -f \"$f\" ] && printf '{IMPORT_MARK}%s\\n' \"$f\" && {REDACT_SECRETS} \"$f\"; done; true",
        patterns.join(" "),
    ))
}

/// `containerd config dump` on a node, its secrets redacted there (see [`REDACT_SECRETS`]); a
/// dump that fails fails the command.
pub fn dump_command() -> String {
    format!(
        "dump=$(/usr/local/bin/containerd config dump) && printf '%s\\n' \"$dump\" | {REDACT_SECRETS}"
    )
}

/// A filter (`sed` over its file arguments or stdin) that replaces the value of every
/// credential key of a containerd config (`password`, `auth`, `identitytoken` of
/// `registry.configs`): what the node prints is logged, and the judging needs only which hosts
/// have credentials, never their values.
const REDACT_SECRETS: &str =
    "sed -E 's/^([[:space:]]*(password|auth|identitytoken)[[:space:]]*=).*/\\1 \"<redacted>\"/'";

/// kk's containerd config file.
const CONFIG: &str = "/etc/containerd/config.toml";
/// The line before each drop-in's text in [`imports_command`]'s output.
const IMPORT_MARK: &str = "#### kk-import ";

/// The `(path, text)` of each drop-in in [`imports_command`]'s output.
pub fn split_imports(printed: &str) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = Vec::new();
    for line in printed.lines() {
        if let Some(path) = line.strip_prefix(IMPORT_MARK) {
            files.push((path.to_owned(), String::new()));
        } else if let Some((_, text)) = files.last_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    files
}
