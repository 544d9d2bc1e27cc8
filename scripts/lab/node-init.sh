#!/usr/bin/env bash
# The first process of one node lab node (scripts/lab/nodes.sh): runs as PID 1 of the node's own
# PID namespace (started through `ip netns exec NS unshare --cgroup --mount --uts --pid --fork
# --mount-proc`), sets up the node's view of the machine, then becomes the node's sshd.
#
#   node-init.sh N NODE_DIR
#
# NODE_DIR (prepared by nodes.sh) holds upper/<dir> and work/<dir> for every overlaid system
# directory (upper/ already carries the node's /etc/ssh, hostname, users and authorized keys),
# data/ for directories that must be a real file system, overlay-dirs (the list to overlay) and
# cgroups (the node's cgroup hierarchies). NODE_DIR may be under /tmp, which the node replaces
# with a tmpfs: everything under it is used before that happens (open mounts stay valid).
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 N NODE_DIR" >&2; exit 2; }
N=$1
D=$2

hostname "node$N"
# Nothing the node mounts may propagate back to the host's mount namespace (unshare already makes
# the new namespace private; this is cheap insurance for every mount below).
mount --make-rprivate /

# Copy-on-write system directories: the node sees the host's files, its writes land in
# NODE_DIR/upper (the host and the other nodes never see them). `volatile`: no sync of the upper
# file system when the overlay goes, which made each node's teardown take about a second (the
# upper directories are thrown away on the node's next start anyway; fsync inside the overlay
# becomes a no-op, but /var/lib/etcd below is a real directory).
while IFS= read -r dir; do
  [ -n "$dir" ] || continue
  mount -t overlay "kklab-node$N" -o "lowerdir=/$dir,upperdir=$D/upper/$dir,workdir=$D/work/$dir,volatile" "/$dir"
done < "$D/overlay-dirs"

# A node is a fresh machine: root's shell start-up files are Debian's defaults, not the host's
# (whose pyenv or cargo set-up would add a third of a second to every command the installer runs,
# since bash reads ~/.bashrc when sshd starts it). Written into this node's overlay only.
for f in .bashrc .profile; do
  if [ -f "/etc/skel/$f" ]; then cp "/etc/skel/$f" "/root/$f"; else rm -f "/root/$f"; fi
done

# containerd's overlayfs snapshotter (and etcd's fsync behaviour) need a real file system, not an
# overlay upper (LAB-NOTES P3): bind real directories of NODE_DIR there.
for dir in var/lib/containerd var/lib/etcd; do
  mkdir -p "$D/data/$dir" "/$dir"
  mount --bind "$D/data/$dir" "/$dir"
done

# `ip netns exec` mounted a fresh /sys without the cgroup file systems (LAB-NOTES P4), and runc
# needs them. The node runs in its own cgroup namespace rooted at the cgroups nodes.sh made for
# it, so these mounts show only the node's subtree, and whatever runc creates inside the node
# lands below it (removed by `nodes.sh down`). Lines: HOST_DIR FSTYPE OPTIONS NODE_MOUNTPOINT.
mounted_root=""
while read -r _host_dir fstype options target; do
  [ -n "${target:-}" ] || continue
  if [ "$target" = /sys/fs/cgroup ]; then
    mount -t "$fstype" -o "$options" "$fstype" /sys/fs/cgroup   # a unified-only host
    mounted_root=yes
    continue
  fi
  if [ -z "$mounted_root" ]; then
    mount -t tmpfs -o mode=755,nosuid,nodev,noexec cgroup_root /sys/fs/cgroup
    mounted_root=yes
  fi
  mkdir -p "$target"
  mount -t "$fstype" -o "$options" "$fstype" "$target"
done < "$D/cgroups"

# Private /tmp and /run (after the last use of NODE_DIR, which may live under /tmp).
mount -t tmpfs -o mode=1777,nosuid,nodev kklab-tmp /tmp
mount -t tmpfs -o mode=755,nosuid,nodev kklab-run /run
mkdir -p /run/sshd /run/lock   # /run/sshd: sshd's privilege separation directory (LAB-NOTES P7)
chmod 1777 /run/lock

# sshd as PID 1: ending it ends every process of the node. -D: stay in the foreground; -e: log
# to stderr, which nodes.sh sends to NODE_DIR/init.out.
exec /usr/sbin/sshd -D -e -f /etc/ssh/sshd_config
