use super::*;

/// Output of the script on a lab node (trimmed where long).
const NODE: &str = r#"
@@clock
1795000000.250000000

@@files
/etc/os-release:PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
/etc/os-release:NAME="Debian GNU/Linux"
/etc/os-release:VERSION_ID="12"
/etc/os-release:ID=debian
/proc/meminfo:MemTotal:       24624464 kB
/proc/meminfo:MemFree:        20000000 kB
/proc/meminfo:SwapTotal:             0 kB
/proc/net/tcp:  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
/proc/net/tcp:   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1
/proc/net/tcp:   1: 0100007F:192B 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1
/proc/net/tcp:   2: 0B00FA0A:0016 0C00FA0A:D431 01 00000000:00000000 00:00000000 00000000     0        0 3 1
/proc/net/tcp6:   0: 00000000000000000000000001000000:1A0B 00000000000000000000000000000000:0000 0A 0 0 0 0 0 4 1
/proc/modules:overlay 151552 0 - Live 0x0000000000000000
/proc/modules:br_netfilter 32768 0 - Live 0x0000000000000000
/proc/sys/kernel/osrelease:6.1.0-18-amd64
/proc/sys/kernel/hostname:node1
/proc/self/status:Name:   grep
/proc/self/status:Uid:    0       0       0       0
/proc/sys/net/ipv4/ip_forward:1
/proc/sys/net/bridge/bridge-nf-call-iptables:1
/etc/kubekey/installed.json:{
/etc/kubekey/installed.json:  "bundle": "sha256:aa",
/etc/kubekey/installed.json:  "kubernetes_version": "v1.31.4",
/etc/kubekey/installed.json:  "phases": [
/etc/kubekey/installed.json:    "os",
/etc/kubekey/installed.json:    "kubernetes"
/etc/kubekey/installed.json:  ],
/etc/kubekey/installed.json:  "files": []
/etc/kubekey/installed.json:}

@@machine
x86_64

@@cpus
2

@@resolves
node1
no

@@proxy session
https_proxy=http://***@proxy.example:3128
NO_PROXY=10.250.0.0/16,.cluster.local

@@proxy login shell

@@proxy /etc/environment
export HTTP_PROXY="http://proxy.example:3128"

@@addresses
1: lo    inet 127.0.0.1/8 scope host lo\       valid_lft forever preferred_lft forever
2: eth0@if9    inet 10.250.0.11/16 brd 10.250.255.255 scope global eth0\       valid_lft forever
2: eth0@if9    inet6 fe80::1/64 scope link \       valid_lft forever preferred_lft forever

@@holders
LISTEN 0      128          0.0.0.0:22        0.0.0.0:*    users:(("sshd",pid=301,fd=3))
LISTEN 0      4096       127.0.0.1:6443      0.0.0.0:*    users:(("kube-apiserver",pid=812,fd=3),("kube-apiserver",pid=812,fd=7))
LISTEN 0      4096           [::1]:6667         [::]:*
LISTEN 0      4096     [::]:5443         [::]:*    users:(("kk-install",pid=90,fd=9))

@@cgroup
tmpfs

@@commands
ip
mount
touch

@@version etcd
etcd Version: 3.4.23
Git SHA: Not provided (use ./build instead of go build)

@@version containerd
containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+b1

@@dpkg
base-files	12.4+deb12u5		installed
libc6	2.36-9+deb12u4		installed
mawk	1.3.4.20200120-3.1	awk	installed
iptables	1.8.9-2		config-files

@@nfsd-module
no

@@manifests
kube-apiserver.yaml

@@etcd-data
yes

@@disk-paths
/
/var/lib
/opt

@@df
Filesystem       1-blocks        Used    Available Capacity Mounted on
/dev/vda     270000000000 10000000000 53687091200      16% /
/dev/vda     270000000000 10000000000 53687091200      16% /
/dev/vdb      10000000000  1000000000  9000000000      10% /

@@store-blobs
aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 1048576
bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb 42
.tmp-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 9

@@end
"#;

#[test]
fn parses_every_section_of_a_node() {
    let facts = Facts::parse(NODE).expect("parses");
    assert_eq!(facts.os.id, "debian");
    assert_eq!(facts.os.version_id, "12");
    assert_eq!(facts.os.pretty_name, "Debian GNU/Linux 12 (bookworm)");
    assert_eq!(facts.kernel, "6.1.0-18-amd64");
    assert_eq!(facts.arch(), "amd64");
    assert_eq!(facts.cpus, 2);
    assert_eq!(facts.memory_bytes, 24_624_464 * 1024);
    assert_eq!(facts.swap_bytes, 0);
    assert_eq!(facts.hostname, "node1");
    assert_eq!(facts.resolved_name, "node1");
    assert!(!facts.name_resolves);
    assert_eq!(
        facts.proxy_var("session", "https_proxy"),
        Some(("https_proxy", "http://***@proxy.example:3128"))
    );
    assert_eq!(
        facts.proxy_var("session", "no_proxy"),
        Some(("NO_PROXY", "10.250.0.0/16,.cluster.local"))
    );
    assert_eq!(
        facts.proxy_var("/etc/environment", "http_proxy"),
        Some(("HTTP_PROXY", "http://proxy.example:3128"))
    );
    assert_eq!(facts.proxy_var("login shell", "http_proxy"), None);
    assert!(!facts.proxy_env.contains_key("login shell"));
    assert!(facts.has_address("10.250.0.11"));
    assert!(facts.has_address("fe80::1"));
    assert_eq!(facts.addresses["eth0"], ["10.250.0.11", "fe80::1"]);
    let ports: Vec<(u16, &str)> = facts
        .listening
        .iter()
        .map(|l| (l.port, l.address.as_str()))
        .collect();
    assert_eq!(ports, [(22, "0.0.0.0"), (6443, "127.0.0.1"), (6667, "::1")]);
    // A socket `ss` names no process for has no holder.
    assert_eq!(
        facts.port_holders,
        BTreeMap::from([
            (22, "sshd".to_owned()),
            (5443, "kk-install".to_owned()),
            (6443, "kube-apiserver".to_owned()),
        ])
    );
    assert_eq!(facts.port_holder(6667), None);
    assert_eq!(
        facts.kk_phases.as_deref(),
        Some(["os".to_owned(), "kubernetes".to_owned()].as_slice())
    );
    assert!(facts.kk_installed("kubernetes") && !facts.kk_installed("etcd"));
    assert_eq!(facts.sysctl("net.ipv4.ip_forward"), Some("1"));
    assert_eq!(facts.sysctl("net.ipv6.conf.all.forwarding"), None);
    assert_eq!(facts.modules, ["overlay", "br_netfilter"]);
    assert_eq!(facts.cgroup_fs, "tmpfs");
    assert!(facts.has_command("mount") && !facts.has_command("socat"));
    assert_eq!(facts.versions["etcd"], "etcd Version: 3.4.23");
    assert!(!facts.nfsd);
    let packages = facts.installed_packages.as_ref().expect("dpkg");
    assert_eq!(
        packages.keys().collect::<Vec<_>>(),
        ["base-files", "libc6", "mawk"]
    );
    assert_eq!(packages["mawk"].provides, "awk");
    assert!(facts.has_package("libc6") && !facts.has_package("iptables"));
    assert_eq!(facts.static_pods, ["kube-apiserver.yaml"]);
    assert!(facts.etcd_data_present);
    assert_eq!(facts.free_bytes["/var/lib"], 53_687_091_200);
    assert_eq!(facts.free_bytes["/opt"], 9_000_000_000);
    // An unpack's temporary file is no blob.
    assert_eq!(
        facts.store_blobs,
        BTreeMap::from([
            (
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".to_owned(),
                1_048_576
            ),
            (
                "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb".to_owned(),
                42
            )
        ])
    );
    assert!((facts.clock - 1_795_000_000.25).abs() < 1e-6);
    assert_eq!(facts.uid, 0);
    assert!(is_complete(NODE));
}

#[test]
fn kernel_addresses_decode_in_host_byte_order() {
    for (hex, address) in [
        ("0100007F", Some("127.0.0.1")),
        ("0B00FA0A", Some("10.250.0.11")),
        ("00000000000000000000000001000000", Some("::1")),
        (
            "0000000000000000FFFF00000B00FA0A",
            Some("::ffff:10.250.0.11"),
        ),
        ("XYZ", None),
    ] {
        assert_eq!(kernel_address(hex).as_deref(), address, "{hex}");
    }
}

#[test]
fn missing_sections_stay_empty() {
    let facts = Facts::parse(
        "\n@@files\n/proc/sys/kernel/osrelease:6.8.0\n/proc/sys/kernel/arch:aarch64\n",
    )
    .expect("parses");
    assert_eq!((facts.kernel.as_str(), facts.arch()), ("6.8.0", "arm64"));
    assert!(facts.os.id.is_empty() && facts.listening.is_empty());
    assert_eq!(facts.uid, u32::MAX);
    assert!(!is_complete(
        "\n@@files\n/proc/sys/kernel/osrelease:6.8.0\n"
    ));
}

/// Node output is untrusted: multibyte text anywhere, cut anywhere, never panics, and each
/// section keeps exactly its body.
#[test]
fn multibyte_output_never_splits_a_character() {
    let table: &[(&str, &str, &str)] = &[
        // (output, section, expected trimmed body)
        ("\n@@cgroup\né", "cgroup", "é"),
        ("\n@@cgroup\n日本語", "cgroup", "日本語"),
        ("\n@@cgroup\n🦀\n@@resolves\nyes\n", "cgroup", "🦀"),
        ("\n@@cgroup\n🦀\n@@resolves\nyes\n", "resolves", "yes"),
        ("\n@@ключ\nзначение\n", "ключ", "значение"),
        ("\n@@é", "é", ""),
        ("é\n@@cgroup\nx", "cgroup", "x"),
        // A `@@` inside a line, or on the first line, starts nothing.
        ("@@cgroup\nx\n@@end\n", "cgroup", ""),
        ("\n@@cgroup\nä@@b\n", "cgroup", "ä@@b"),
    ];
    for (output, section, body) in table {
        let sections = split_sections(output);
        assert_eq!(
            sections.get(section).map(|b| b.trim()).unwrap_or_default(),
            *body,
            "{output:?}"
        );
    }
    // Every prefix of a multibyte-laden output parses (cuts inside a character are not
    // valid `str`s, so every char boundary).
    let text = format!("{NODE}\n@@version kubelet\nKubernetes v1.31.4 — ünïcödé ✓\n@@cgroup\n日本");
    for (cut, _) in text.char_indices() {
        let _ = Facts::parse(&text[..cut]);
    }
    let facts = Facts::parse(
        "\n@@files\n/proc/sys/kernel/hostname:nœud-é\n/etc/os-release:PRETTY_NAME=\"Débian ✓\"\n\n@@commands\nip\n🦀\n",
    )
    .expect("parses");
    assert_eq!(facts.hostname, "nœud-é");
    assert_eq!(facts.os.pretty_name, "Débian ✓");
    assert_eq!(facts.commands, ["ip", "🦀"]);
}

#[test]
fn absurd_numbers_are_refused_or_ignored_never_wrapped() {
    let meminfo = |mem: &str, swap: &str| {
        Facts::parse(&format!(
            "\n@@files\n/proc/meminfo:MemTotal: {mem}\n/proc/meminfo:SwapTotal: {swap}\n"
        ))
    };
    let max_kib = u64::MAX / 1024;
    for (mem, swap, expected) in [
        ("2048 kB", "0 kB", Ok((2048 * 1024, 0))),
        (
            &format!("{max_kib} kB") as &str,
            "0 kB",
            Ok((max_kib * 1024, 0)),
        ),
        (&format!("{} kB", max_kib + 1), "0 kB", Err("MemTotal")),
        ("1 kB", &format!("{} kB", u64::MAX), Err("SwapTotal")),
        // Not numbers, or beyond u64: unreadable, so 0 (the memory rule then fails).
        ("99999999999999999999999 kB", "-1 kB", Ok((0, 0))),
        ("١٢٣ kB", "½ kB", Ok((0, 0))),
        ("", "", Ok((0, 0))),
    ] {
        let parsed = meminfo(mem, swap);
        match expected {
            Ok(bytes) => {
                let facts = parsed.unwrap_or_else(|e| panic!("{mem} {swap}: {e}"));
                assert_eq!(
                    (facts.memory_bytes, facts.swap_bytes),
                    bytes,
                    "{mem} {swap}"
                );
            }
            Err(field) => {
                // What `gather` reports: the node, the file and the field.
                let error = crate::ssh::SshError::Facts {
                    node: "node1".to_owned(),
                    source: parsed.expect_err(mem),
                }
                .to_string();
                for words in ["node `node1`", &format!("`{field}`"), "/proc/meminfo"] {
                    assert!(error.contains(words), "{error} lacks {words}");
                }
            }
        }
    }
    for (clock, expected) in [
        ("1795000000.5", 1_795_000_000.5),
        ("inf", 0.0),
        ("NaN", 0.0),
        ("-inf", 0.0),
        ("1e999", 0.0),
    ] {
        let facts = Facts::parse(&format!("\n@@clock\n{clock}\n")).expect("parses");
        assert!(
            (facts.clock - expected).abs() < 1e-6,
            "{clock}: {}",
            facts.clock
        );
    }
    let facts = Facts::parse(
        "\n@@cpus\n99999999999\n@@files\n/proc/net/tcp:   0: 0100007F:FFFFFF 00000000:0000 0A\n",
    )
    .expect("parses");
    assert_eq!(facts.cpus, 0);
    assert!(facts.listening.is_empty());
}

/// The name looked up, and output recorded before it was printed.
#[test]
fn resolves_names_what_was_looked_up() {
    for (body, name, resolves) in [
        ("node1\nyes", "node1", true),
        ("node1\nno", "node1", false),
        ("yes", "", true),
        ("no", "", false),
        ("", "", false),
        ("a\nb\nyes", "", false),
    ] {
        let facts = Facts::parse(&format!("\n@@resolves\n{body}\n")).expect("parses");
        assert_eq!(
            (facts.resolved_name.as_str(), facts.name_resolves),
            (name, resolves),
            "{body:?}"
        );
    }
    // Facts recorded before: `hostnameResolves`, no `resolvedName`, no `proxyEnv`.
    let mut json = serde_json::to_value(Facts::default()).expect("json");
    let object = json.as_object_mut().expect("object");
    for key in ["resolvedName", "nameResolves", "proxyEnv"] {
        assert!(object.remove(key).is_some(), "{key}");
    }
    object.insert("hostnameResolves".to_owned(), serde_json::Value::Bool(true));
    let facts: Facts = serde_json::from_value(json).expect("old facts read");
    assert!(facts.name_resolves && facts.resolved_name.is_empty());
}

/// Proxy variables only, any case, `export` and quotes as `/etc/environment` may have
/// them; credentials masked (the script masks them too, before they reach a log).
#[test]
fn proxy_variables_are_kept_alone_and_masked() {
    let vars = proxy_vars(
        "http_proxy=http://user:secret@proxy:3128\n\
         export HTTPS_PROXY='http://proxy:3128'\n\
         \texport  no_proxy=\"10.0.0.0/8, .local\"\n\
         PATH=/usr/bin\n\
         exporthttp_proxy=x\n\
         ftp_proxy=http://proxy:21\n\
         No_Proxy=mixed\n\
         garbage\n",
    );
    let expected: Vec<(&str, &str)> = vec![
        ("HTTPS_PROXY", "http://proxy:3128"),
        ("No_Proxy", "mixed"),
        ("http_proxy", "http://***@proxy:3128"),
        ("no_proxy", "10.0.0.0/8, .local"),
    ];
    let found: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(found, expected);
    for (value, masked) in [
        ("http://u:p@proxy:3128", "http://***@proxy:3128"),
        ("http://u:p@ss@proxy:3128", "http://***@proxy:3128"),
        ("http://proxy:3128", "http://proxy:3128"),
        ("10.0.0.0/8,a@b", "10.0.0.0/8,a@b"),
    ] {
        assert_eq!(mask_credentials(value), masked, "{value}");
    }
}

/// dpkg-query's lines: installed packages only, by name, with their `Provides`; anything
/// else (other states, short lines) is left out.
#[test]
fn dpkg_query_keeps_the_installed_packages() {
    // Name, version, `Provides`.
    type Package = (&'static str, &'static str, &'static str);
    let table: &[(&str, &[Package])] = &[
        ("", &[]),
        (
            "socat\t1.7.4.4-2\t\tinstalled\n",
            &[("socat", "1.7.4.4-2", "")],
        ),
        (
            "mawk\t1.3.4-3.1\tawk\tinstalled\n",
            &[("mawk", "1.3.4-3.1", "awk")],
        ),
        (
            "libc6\t2.36-9\tlibc6-abi (= 2.36), glibc\tinstalled\n",
            &[("libc6", "2.36-9", "libc6-abi (= 2.36), glibc")],
        ),
        ("nfs-common\t1:2.6.2-4\t\tconfig-files\n", &[]),
        ("ethtool\t1:6.1-1\t\thalf-installed\n", &[]),
        ("ethtool\t1:6.1-1\t\tnot-installed\n", &[]),
        ("garbage line\n\tinstalled\n", &[]),
        ("a\t1\tinstalled\n", &[]),
    ];
    for (text, expected) in table {
        let found = dpkg_packages(text);
        let found: Vec<(&str, &str, &str)> = found
            .iter()
            .map(|(name, p)| (name.as_str(), p.version.as_str(), p.provides.as_str()))
            .collect();
        assert_eq!(found, *expected, "{text:?}");
    }
}

/// dpkg and nfsd from their sections, and facts recorded before them still read.
#[test]
fn dpkg_and_nfsd_sections() {
    for (output, dpkg, packages, nfsd) in [
        ("\n@@end\n", false, 0, false),
        ("\n@@dpkg\n@@end\n", true, 0, false),
        ("\n@@dpkg\nsocat\t1.7\t\tinstalled\n", true, 1, false),
        ("\n@@nfsd-module\nyes\n", false, 0, true),
        ("\n@@nfsd-module\nno\n", false, 0, false),
        ("\n@@files\n/proc/filesystems:nodev\tnfsd\n", false, 0, true),
        ("\n@@files\n/proc/filesystems:nodev\tnfs\n", false, 0, false),
    ] {
        let facts = Facts::parse(output).expect("parses");
        assert_eq!(
            (
                facts.installed_packages.is_some(),
                facts.installed_packages.as_ref().map_or(0, BTreeMap::len),
                facts.nfsd
            ),
            (dpkg, packages, nfsd),
            "{output:?}"
        );
    }
    let mut json = serde_json::to_value(Facts::default()).expect("json");
    let object = json.as_object_mut().expect("object");
    for key in ["installedPackages", "nfsd"] {
        assert!(object.remove(key).is_some(), "{key}");
    }
    let facts: Facts = serde_json::from_value(json).expect("old facts read");
    assert!(facts.installed_packages.is_none() && !facts.nfsd);
}

/// `uname -m` as Debian names the architecture; the distribution as the package sets do;
/// the installed packages as the resolver reads them.
#[test]
fn debian_names_of_the_node() {
    for (machine, arch) in [
        ("x86_64", Some("amd64")),
        ("aarch64", Some("arm64")),
        ("armv7l", Some("armhf")),
        ("armv6l", Some("armel")),
        ("i686", Some("i386")),
        ("ppc64le", Some("ppc64el")),
        ("s390x", Some("s390x")),
        ("riscv64", Some("riscv64")),
        ("mips", None),
        ("", None),
    ] {
        let facts = Facts {
            machine: machine.to_owned(),
            ..Facts::default()
        };
        assert_eq!(facts.deb_arch(), arch, "{machine}");
    }
    let mut facts = Facts::parse(NODE).expect("parses");
    assert_eq!(
        facts.distro().map(|d| d.to_string()).as_deref(),
        Some("debian-12")
    );
    let installed = facts.installed();
    assert_eq!(installed.packages.len(), 3);
    assert_eq!(installed.packages["mawk"].provides, "awk");
    assert_eq!(installed.packages["libc6"].version, "2.36-9+deb12u4");
    facts.os.version_id.clear();
    assert_eq!(facts.distro(), None);
}

#[test]
fn the_script_names_every_command_of_the_rules() {
    let script = gather_script("node1");
    assert!(!script.contains("{commands}") && !script.contains("{name}"));
    assert!(script.contains("n='node1'"));
    // A name is one shell word whatever it holds.
    assert!(gather_script("a'b; rm").contains(r"n='a'\''b; rm'"));
    for command in crate::precheck::KUBEADM_COMMANDS.iter().chain(&[
        "fio",
        "mount.nfs",
        "exportfs",
        "dpkg-query",
        "nfsd",
    ]) {
        assert!(script.contains(command), "{command}");
    }
    for file in [
        "/proc/filesystems",
        "/proc/sys/net/ipv6/conf/default/forwarding",
        "/proc/sys/net/bridge/bridge-nf-call-iptables",
        "/proc/sys/net/bridge/bridge-nf-call-ip6tables",
        "/etc/environment",
    ] {
        assert!(script.contains(file), "{file}");
    }
}

#[test]
fn only_kks_record_names_phases() {
    for (text, phases) in [
        (
            r#"{"bundle": "sha256:aa", "phases": ["os"], "files": []}"#,
            Some(vec!["os"]),
        ),
        // Another tool's file at that path, or a torn one, is no record of kk's.
        (r#"{"bundle": "mine", "phases": ["os"]}"#, None),
        (r#"{"phases": ["os"]}"#, None),
        (r#"{"bundle": "sha256:aa", "phases": ["os""#, None),
        ("", None),
    ] {
        let expected = phases.map(|p: Vec<&str>| p.into_iter().map(str::to_owned).collect());
        assert_eq!(kk_phases(text), expected, "{text}");
    }
}

#[test]
fn port_holders_survive_odd_ss_lines() {
    let text = "LISTEN 0 4096 *:10250 *:* users:((\"kubelet\",pid=1,fd=2))\n\
                LISTEN 0 4096 %lo:53 *:* users:((\"\",pid=2,fd=3))\n\
                garbage\n\
                LISTEN 0 4096 *:notaport *:* users:((\"x\",pid=3,fd=4))\n";
    assert_eq!(
        port_holders(text),
        BTreeMap::from([(10250, "kubelet".to_owned())])
    );
}
