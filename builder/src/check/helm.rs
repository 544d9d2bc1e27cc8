//! Which helm renders the charts: the bundle's own when it runs on this machine (the very helm
//! the install renders them with), else a `helm` on `PATH`.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read as _, Seek as _};
use std::path::{Path, PathBuf};

use bundle_spec::platform::Platform;

use super::CheckError;
use crate::fetch::blocking;
use crate::resolve::binary::ResolvedFile;

/// The helm that renders the charts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Helm<'a> {
    /// The bundle's helm for this machine's platform: a release tarball (`linux-amd64/helm`
    /// inside) or the executable itself, in the cache.
    Bundled(&'a ResolvedFile),
    /// A `helm` found on `PATH`.
    OnPath(PathBuf),
}

impl Helm<'_> {
    /// Where the helm of `self` can be run: the bundled one is first extracted into `dir`.
    pub(super) async fn executable(&self, dir: &Path) -> Result<PathBuf, CheckError> {
        match self {
            Helm::OnPath(path) => Ok(path.clone()),
            Helm::Bundled(file) => {
                let (blob, name, to) = (
                    file.blob.clone(),
                    file.file_name.clone(),
                    dir.join(executable_name()),
                );
                blocking("extracting the bundle's helm", move || {
                    // The build may have left it unread (its frames are cached): what runs
                    // here is checked first.
                    blob.verify()?;
                    extract(&blob.path, &name, &to)?;
                    Ok::<_, CheckError>(to)
                })
                .await?
            }
        }
    }
}

/// The helm to render with: the bundle's `helm` for `machine` if it has one, else `on_path`.
pub(super) fn choose<'a>(
    bundled: &[&'a ResolvedFile],
    machine: Option<&Platform>,
    on_path: Option<PathBuf>,
) -> Option<Helm<'a>> {
    machine
        .and_then(|machine| {
            bundled
                .iter()
                .find(|file| file.platform.matches(machine))
                .copied()
        })
        .map(Helm::Bundled)
        .or(on_path.map(Helm::OnPath))
}

/// This machine's platform, spelled as Go (and so a bundle's platforms) spells it; `None` for
/// one Go has no name for.
pub(super) fn machine() -> Option<Platform> {
    go_platform(std::env::consts::OS, std::env::consts::ARCH)
}

/// Rust's names of an operating system and architecture (`std::env::consts`) as a Go platform.
fn go_platform(os: &str, arch: &str) -> Option<Platform> {
    let os = match os {
        "macos" => "darwin",
        other => other,
    };
    let arch = match arch {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "loongarch64" => "loong64",
        "powerpc64" if cfg!(target_endian = "little") => "ppc64le",
        "powerpc64" => "ppc64",
        other => other,
    };
    format!("{os}/{arch}").parse().ok()
}

/// The first executable `helm` in the directories of `path` (the value of `PATH`).
pub(super) fn on_path(path: Option<&OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .map(|dir| dir.join(executable_name()))
        .find(|candidate| is_executable(candidate))
}

fn executable_name() -> String {
    format!("helm{}", std::env::consts::EXE_SUFFIX)
}

fn is_executable(path: &Path) -> bool {
    let Ok(metadata) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        metadata.is_file()
    }
}

/// Writes the executable of the bundle's helm file `from` (named `name` upstream) to `to`: the
/// `helm` member of a release tarball (gzip, whatever its name), or the file itself. It is
/// written beside `to` and renamed into place, so a tarball without helm leaves nothing there.
fn extract(from: &Path, name: &str, to: &Path) -> Result<(), CheckError> {
    let file_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| CheckError::File { path, source }
    };
    let mut input = File::open(from).map_err(file_error(from))?;
    let dir = to.parent().unwrap_or(Path::new("."));
    let mut output = tempfile::NamedTempFile::new_in(dir).map_err(file_error(to))?;
    if is_gzip(&mut input).map_err(file_error(from))? {
        if !copy_helm_member(input, output.as_file_mut()).map_err(file_error(from))? {
            return Err(CheckError::HelmArchive {
                file: name.to_owned(),
            });
        }
    } else {
        io::copy(&mut input, output.as_file_mut()).map_err(file_error(to))?;
    }
    make_executable(output.as_file()).map_err(file_error(to))?;
    output.persist(to).map_err(|e| file_error(to)(e.error))?;
    Ok(())
}

/// Whether `file` starts with gzip's magic bytes; leaves it at its start.
fn is_gzip(file: &mut File) -> io::Result<bool> {
    let mut magic = Vec::with_capacity(2);
    (&mut *file).take(2).read_to_end(&mut magic)?;
    file.rewind()?;
    Ok(magic == [0x1f, 0x8b])
}

/// Copies the regular file called `helm` of the tar.gz `tarball` to `output`; `false` if
/// there is none.
fn copy_helm_member(tarball: File, output: &mut File) -> io::Result<bool> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(tarball));
    for entry in archive.entries()? {
        let mut entry = entry?;
        let is_helm = entry.header().entry_type().is_file()
            && entry.path()?.file_name() == Some(OsStr::new(&executable_name()));
        if is_helm {
            io::copy(&mut entry, output)?;
            return Ok(true);
        }
    }
    Ok(false)
}

fn make_executable(file: &File) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        file.set_permissions(std::fs::Permissions::from_mode(0o755))
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{CacheError, CachedBlob};

    /// A bundled helm file at `path`, with the digest and size of what is there (if anything).
    fn helm_file(platform: &str, path: &Path, file_name: &str) -> ResolvedFile {
        let bytes = std::fs::read(path).unwrap_or_default();
        ResolvedFile {
            name: "helm".into(),
            version: "v3.18.6".into(),
            platform: platform.parse().unwrap(),
            url: format!("https://get.helm.sh/{file_name}"),
            blob: CachedBlob {
                digest: bundle_spec::Sha256Digest::of(&bytes),
                size: bytes.len() as u64,
                path: path.to_path_buf(),
            },
            file_name: file_name.into(),
        }
    }

    #[test]
    fn rust_platform_names_become_gos() {
        for (os, arch, expected) in [
            ("linux", "x86_64", Some("linux/amd64")),
            ("linux", "aarch64", Some("linux/arm64")),
            ("macos", "aarch64", Some("darwin/arm64")),
            ("windows", "x86", Some("windows/386")),
            ("linux", "s390x", Some("linux/s390x")),
            ("linux", "riscv64", Some("linux/riscv64")),
            ("linux", "", None),
        ] {
            let expected: Option<Platform> = expected.map(|p| p.parse().unwrap());
            assert_eq!(go_platform(os, arch), expected, "{os} {arch}");
        }
    }

    #[test]
    fn the_bundles_helm_for_this_machine_wins_over_path() {
        let path = Path::new("/cache/blob");
        let amd64 = helm_file("linux/amd64", path, "helm-v3.18.6-linux-amd64.tar.gz");
        let arm64 = helm_file("linux/arm64", path, "helm-v3.18.6-linux-arm64.tar.gz");
        let on_path = || Some(PathBuf::from("/usr/bin/helm"));
        let platform = |p: &str| p.parse::<Platform>().unwrap();
        let (linux_amd64, linux_arm64_v8, darwin) = (
            platform("linux/amd64"),
            platform("linux/arm64/v8"),
            platform("darwin/arm64"),
        );
        let both = [&amd64, &arm64];
        // (bundled helms, this machine, helm on PATH, expected)
        let cases = [
            (
                &both[..],
                Some(&linux_amd64),
                on_path(),
                Some(Helm::Bundled(&amd64)),
            ),
            (
                &both[..],
                Some(&linux_arm64_v8),
                None,
                Some(Helm::Bundled(&arm64)),
            ),
            (
                &both[..],
                Some(&darwin),
                on_path(),
                on_path().map(Helm::OnPath),
            ),
            (&both[..], None, on_path(), on_path().map(Helm::OnPath)),
            (
                &[&arm64][..],
                Some(&linux_amd64),
                on_path(),
                on_path().map(Helm::OnPath),
            ),
            (
                &[][..],
                Some(&linux_amd64),
                on_path(),
                on_path().map(Helm::OnPath),
            ),
            (&[&arm64][..], Some(&linux_amd64), None, None),
            (&[][..], Some(&linux_amd64), None, None),
        ];
        for (index, (bundled, machine, on_path, expected)) in cases.into_iter().enumerate() {
            assert_eq!(choose(bundled, machine, on_path), expected, "case {index}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn only_an_executable_helm_on_path_counts() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let (plain, runnable, empty) = (
            dir.path().join("plain"),
            dir.path().join("runnable"),
            dir.path().join("empty"),
        );
        for d in [&plain, &runnable, &empty] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::write(plain.join("helm"), "").unwrap();
        std::fs::write(runnable.join("helm"), "").unwrap();
        std::fs::set_permissions(
            runnable.join("helm"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        std::fs::create_dir(empty.join("helm")).unwrap();
        let path = std::env::join_paths([&empty, &plain, &runnable]).unwrap();
        assert_eq!(on_path(Some(&path)), Some(runnable.join("helm")));
        let path = std::env::join_paths([&empty, &plain]).unwrap();
        assert_eq!(on_path(Some(&path)), None);
        assert_eq!(on_path(None), None);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn the_bundled_helm_is_taken_out_of_its_release_tarball() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let tarball = dir.path().join("blob");
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            File::create(&tarball).unwrap(),
            flate2::Compression::fast(),
        ));
        for (name, body) in [
            ("linux-amd64/LICENSE", &b"license"[..]),
            ("linux-amd64/helm", &b"#!/bin/sh\n"[..]),
        ] {
            let mut header = tar::Header::new_gnu();
            header.set_size(body.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, name, body).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap();

        let file = helm_file("linux/amd64", &tarball, "helm-v3.18.6-linux-amd64.tar.gz");
        let out = tempfile::tempdir().unwrap();
        let helm = Helm::Bundled(&file).executable(out.path()).await.unwrap();
        assert_eq!(std::fs::read(&helm).unwrap(), b"#!/bin/sh\n");
        let mode = std::fs::metadata(&helm).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);

        // A tarball without helm is refused, naming the file.
        let file = helm_file("linux/amd64", &tarball, "helm.tgz");
        std::fs::remove_file(&helm).unwrap();
        let license_only = dir.path().join("license-only");
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            File::create(&license_only).unwrap(),
            flate2::Compression::fast(),
        ));
        let mut header = tar::Header::new_gnu();
        header.set_size(1);
        header.set_cksum();
        builder
            .append_data(&mut header, "linux-amd64/LICENSE", &b"x"[..])
            .unwrap();
        builder.into_inner().unwrap().finish().unwrap();
        let file = ResolvedFile {
            blob: helm_file("linux/amd64", &license_only, "helm.tgz").blob,
            ..file
        };
        let error = Helm::Bundled(&file)
            .executable(out.path())
            .await
            .unwrap_err();
        assert!(error.to_string().contains("`helm.tgz`"), "{error}");
        assert!(!helm.exists(), "nothing left where helm would be");

        // A cached tarball damaged since it was verified is not run: refused, naming the file,
        // and removed for the next build to fetch again.
        let file = helm_file("linux/amd64", &tarball, "helm-v3.18.6-linux-amd64.tar.gz");
        let mut bytes = std::fs::read(&tarball).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&tarball, bytes).unwrap();
        let error = Helm::Bundled(&file)
            .executable(out.path())
            .await
            .unwrap_err();
        assert!(
            matches!(error, CheckError::Cache(CacheError::Damaged { ref path, .. }) if *path == tarball),
            "{error}"
        );
        assert!(!tarball.exists(), "removed");
        assert!(!helm.exists(), "not extracted");
    }
}
