//! The files of the docker runtime (`cri.container_manager: docker`): containerd from docker's
//! static tarball as its own service, dockerd on top of it with the containerd image store, and
//! cri-dockerd as the kubelet's CRI. Images keep their original names: since docker 28, dockerd
//! with the containerd image store resolves every registry host through containerd's hosts
//! configuration read from `/etc/docker/certs.d/<host>/hosts.toml` (moby `daemon/hosts.go`), so
//! kk's registry is each host's mirror there, written by [`super::hosts_toml`] like
//! containerd's own.

use std::fmt::Write as _;

use base64::Engine as _;

use super::Mirror;

/// Where dockerd reads each registry host's `hosts.toml`.
pub const CERTS_D: &str = "/etc/docker/certs.d";
/// dockerd's configuration.
pub const DAEMON_JSON: &str = "/etc/docker/daemon.json";
/// containerd's socket, which dockerd is pointed at (`--containerd`).
pub const CONTAINERD_SOCKET: &str = "/run/containerd/containerd.sock";
/// cri-dockerd's service: what the kubelet's unit wants and starts after.
pub const CRI_UNIT: &str = "cri-docker.service";
/// cri-dockerd's socket (its socket unit listens there): the kubelet's CRI endpoint.
pub const CRI_SOCKET: &str = "unix:///run/cri-dockerd.sock";

/// `/etc/containerd/config.toml` for docker's containerd. Version 2 is read by the containerd
/// 1.7 docker 28 ships and migrated in memory by 2.x. containerd's own CRI plugin is disabled:
/// the kubelet talks to cri-dockerd, and a second CRI on the node would only be a way around
/// kk's mirrors.
pub fn containerd_config() -> &'static str {
    "# Written by kk-install: containerd under dockerd (docker's CRI is cri-dockerd).\n\
     version = 2\n\
     disabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n"
}

/// `/etc/docker/daemon.json`:
/// - `features.containerd-snapshotter`: the containerd image store, with which dockerd (28+)
///   resolves registries through `/etc/docker/certs.d/<host>/hosts.toml`: original names, kk's
///   registry as the mirror;
/// - `exec-opts`: the systemd cgroup driver, as the kubelet is configured;
/// - `live-restore`: containers keep running while dockerd restarts (a rerun that changed its
///   config restarts it);
/// - log limits, so that container logs cannot fill the disk;
/// - `iptables`/`ip6tables` false and `bridge: none`: on a Kubernetes node the CNI and
///   kube-proxy own the packet filter and the pod network; docker's own rules set the FORWARD
///   policy to DROP, which cuts pod traffic between nodes, and its bridge is never used by pods
///   (cri-dockerd attaches them through CNI). A node without iptables (a minimal container
///   host) also needs none of it.
pub fn daemon_json() -> &'static str {
    "{\n\
     \x20 \"features\": {\"containerd-snapshotter\": true},\n\
     \x20 \"exec-opts\": [\"native.cgroupdriver=systemd\"],\n\
     \x20 \"live-restore\": true,\n\
     \x20 \"log-driver\": \"json-file\",\n\
     \x20 \"log-opts\": {\"max-size\": \"100m\", \"max-file\": \"5\"},\n\
     \x20 \"iptables\": false,\n\
     \x20 \"ip6tables\": false,\n\
     \x20 \"bridge\": \"none\"\n\
     }\n"
}

/// `docker.service`, shaped like upstream's (moby `contrib/init/systemd`), on kk's containerd
/// unit rather than a containerd of its own.
pub fn docker_unit() -> String {
    format!(
        "# Written by kk-install (upstream's docker.service, on containerd.service).\n\
         [Unit]\n\
         Description=Docker Application Container Engine\n\
         Documentation=https://docs.docker.com\n\
         After=network-online.target containerd.service\n\
         Wants=network-online.target\n\
         Requires=containerd.service\n\n\
         [Service]\n\
         Type=notify\n\
         ExecStart=/usr/local/bin/dockerd --containerd={CONTAINERD_SOCKET}\n\
         ExecReload=/bin/kill -s HUP $MAINPID\n\
         TimeoutStartSec=0\n\
         Restart=always\n\
         RestartSec=2\n\
         LimitNOFILE=infinity\n\
         LimitNPROC=infinity\n\
         LimitCORE=infinity\n\
         TasksMax=infinity\n\
         Delegate=yes\n\
         KillMode=process\n\
         OOMScoreAdjust=-500\n\n\
         [Install]\n\
         WantedBy=multi-user.target\n"
    )
}

/// `cri-docker.socket`, upstream's (Mirantis `packaging/systemd`): systemd holds cri-dockerd's
/// socket, so the kubelet's endpoint exists from boot.
pub fn cri_dockerd_socket() -> String {
    let path = CRI_SOCKET.trim_start_matches("unix://");
    format!(
        "# Written by kk-install (upstream's cri-docker.socket).\n\
         [Unit]\n\
         Description=CRI Docker Socket for the API\n\
         PartOf=cri-docker.service\n\n\
         [Socket]\n\
         ListenStream={path}\n\
         SocketMode=0660\n\
         SocketUser=root\n\
         SocketGroup=root\n\n\
         [Install]\n\
         WantedBy=sockets.target\n"
    )
}

/// `cri-docker.service`: cri-dockerd on the socket systemd passes it (`fd://`), with the
/// `flags` the plan decided.
pub fn cri_dockerd_unit(flags: &[String]) -> String {
    format!(
        "# Written by kk-install (upstream's cri-docker.service).\n\
         [Unit]\n\
         Description=CRI Interface for Docker Application Container Engine\n\
         Documentation=https://mirantis.com\n\
         After=network-online.target docker.service cri-docker.socket\n\
         Wants=network-online.target\n\
         Requires=docker.service cri-docker.socket\n\n\
         [Service]\n\
         Type=notify\n\
         ExecStart=/usr/local/bin/cri-dockerd --container-runtime-endpoint fd:// {flags}\n\
         ExecReload=/bin/kill -s HUP $MAINPID\n\
         TimeoutSec=0\n\
         RestartSec=2\n\
         Restart=always\n\
         LimitNOFILE=infinity\n\
         LimitNPROC=infinity\n\
         LimitCORE=infinity\n\
         TasksMax=infinity\n\
         Delegate=yes\n\
         KillMode=process\n\n\
         [Install]\n\
         WantedBy=multi-user.target\n",
        flags = flags.join(" ")
    )
}

/// `/etc/docker/certs.d/<host>/hosts.toml`: [`super::hosts_toml`], and with an external
/// registry's `auth` (`username`, `password`) a static `Authorization: Basic` header for the
/// mirror. That header is the one way credentials reach a mirror from dockerd:
///
/// - dockerd 28 (moby v28.5.2, `daemon/containerd/resolver.go` `authorizerFromAuthConfig`) hands
///   the X-Registry-Auth credentials of a pull only to the host they name (`ServerAddress`, else
///   the image's own host, `registry.k8s.io`); a mirror's 401 gets none ("Host doesn't match").
///   `docker pull` sends what `~/.docker/config.json` keeps for the image's host, and
///   cri-dockerd sends the kubelet's credentials, or for its sandbox image what its keyring
///   (`credentialprovider`, Mirantis/cri-dockerd 246bd65 `core/sandbox_helpers.go`) finds in
///   `config.json` for the image's host — never the mirror's. So no `config.json` can
///   authorize a pull through the mirror.
/// - dockerd builds its hosts with containerd's `hostconfig.ConfigureHosts` (moby
///   `daemon/hosts.go`), which keeps `[host."…".header]` and sends it with every request to
///   that host only (containerd v2.1.4 `core/remotes/docker/resolver.go` `request`), never to
///   the image's own host. With the header the registry answers 200, so the authorizer above is
///   never asked.
///
/// The file then holds the password: the docker step writes it root-only.
pub fn hosts_toml(host: &str, mirror: &Mirror<'_>, auth: Option<(&str, &str)>) -> String {
    let mut text = super::hosts_toml(host, mirror);
    if let Some((username, password)) = auth {
        let basic =
            base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
        let _ = write!(
            text,
            "\n[host.\"{url}\".header]\n\x20 Authorization = {value}\n",
            url = super::mirror_url(host, mirror),
            value = super::toml_string(&format!("Basic {basic}")),
        );
    }
    text
}

/// `/etc/crictl.yaml` for cri-dockerd.
pub fn crictl_yaml() -> String {
    format!("runtime-endpoint: {CRI_SOCKET}\nimage-endpoint: {CRI_SOCKET}\ntimeout: 10\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daemon_json_turns_on_the_containerd_store_and_leaves_networking_to_kubernetes() {
        let json: serde_json::Value = serde_json::from_str(daemon_json()).expect("json");
        for (pointer, want) in [
            ("/features/containerd-snapshotter", serde_json::json!(true)),
            (
                "/exec-opts/0",
                serde_json::json!("native.cgroupdriver=systemd"),
            ),
            ("/live-restore", serde_json::json!(true)),
            ("/log-opts/max-size", serde_json::json!("100m")),
            ("/iptables", serde_json::json!(false)),
            ("/bridge", serde_json::json!("none")),
        ] {
            assert_eq!(json.pointer(pointer), Some(&want), "{pointer}");
        }
    }

    #[test]
    fn dockerd_runs_on_kks_containerd() {
        let unit = docker_unit();
        assert!(unit.contains(
            "ExecStart=/usr/local/bin/dockerd --containerd=/run/containerd/containerd.sock\n"
        ));
        assert!(unit.contains("Requires=containerd.service\n"));
    }

    #[test]
    fn cri_dockerd_listens_where_the_kubelet_looks() {
        assert!(cri_dockerd_socket().contains("ListenStream=/run/cri-dockerd.sock\n"));
        let unit =
            cri_dockerd_unit(
                &["--pod-infra-container-image=registry.k8s.io/pause:3.10".to_owned()],
            );
        assert!(unit.contains(
            "ExecStart=/usr/local/bin/cri-dockerd --container-runtime-endpoint fd:// --pod-infra-container-image=registry.k8s.io/pause:3.10\n"
        ));
        assert_eq!(
            crictl_yaml().lines().next(),
            Some("runtime-endpoint: unix:///run/cri-dockerd.sock")
        );
    }

    #[test]
    fn an_external_registrys_credentials_go_to_its_mirror_entry_only() {
        let mirror = Mirror {
            address: "registry.example:5000",
            hosts: &[],
            ca: "/etc/kk/pki/external-registry-ca.crt",
            upstream_fallback: true,
            external: true,
        };
        let with = hosts_toml("registry.k8s.io", &mirror, Some(("pusher", "p\"w:d")));
        let parsed: toml::Table = with.parse().expect("toml");
        let hosts = parsed["host"].as_table().expect("host table");
        assert_eq!(hosts.len(), 1, "{with}");
        let entry = &hosts["https://registry.example:5000/v2/registry.k8s.io"];
        // base64 of `pusher:p"w:d`.
        assert_eq!(
            entry["header"]["Authorization"].as_str(),
            Some("Basic cHVzaGVyOnAidzpk")
        );
        assert_eq!(entry["override_path"].as_bool(), Some(true));
        // The image's own server (the fallback) gets no header.
        assert_eq!(parsed["server"].as_str(), Some("https://registry.k8s.io"));
        assert!(parsed.get("header").is_none(), "{with}");

        let without = hosts_toml("registry.k8s.io", &mirror, None);
        assert_eq!(
            without,
            crate::install::render::hosts_toml("registry.k8s.io", &mirror)
        );
        assert!(!without.contains("header"), "{without}");
    }

    #[test]
    fn containerd_serves_no_cri_of_its_own() {
        let config: toml::Value = toml::from_str(containerd_config()).expect("toml");
        assert_eq!(config["version"].as_integer(), Some(2));
        assert_eq!(config["disabled_plugins"].as_array().map(Vec::len), Some(1));
    }
}
