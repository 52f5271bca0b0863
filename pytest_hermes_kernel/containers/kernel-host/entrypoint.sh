#!/bin/sh
# pytest-hermes-kernel container entrypoint (runs under tini, which is PID 1).
#
# Installs the run's public key from HERMES_AUTHORIZED_KEY into ~hermes/.ssh/authorized_keys
# (0600, owned by hermes); as root, makes this container's own ssh host key (the image has none:
# two containers never share one, so a pinned key tells them apart); then exec's the command so
# that no shell stays between tini and `sleep infinity` / `sshd -D -e`.
set -eu

if [ "$(id -u)" = 0 ] && [ ! -e /etc/ssh/ssh_host_ed25519_key ]; then
    ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key
fi

if [ -n "${HERMES_AUTHORIZED_KEY:-}" ]; then
    ssh_dir=/home/hermes/.ssh
    umask 077
    mkdir -p "$ssh_dir"
    printf '%s\n' "$HERMES_AUTHORIZED_KEY" > "$ssh_dir/authorized_keys"
    chmod 0700 "$ssh_dir"
    chmod 0600 "$ssh_dir/authorized_keys"
    if [ "$(id -u)" = 0 ]; then
        chown -R hermes:hermes "$ssh_dir"
    fi
fi
unset HERMES_AUTHORIZED_KEY

exec "$@"
