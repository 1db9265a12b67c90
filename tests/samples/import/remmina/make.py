#!/usr/bin/env python3
"""Writes the Remmina sample files: remmina.pref, the .remmina profiles of a user who moved
from Remmina 1.1 through 1.3 to 1.4+ (old and new `ssh_auth` meanings, old and new key
layouts), and vectors/*.b64 for the unit tests of src/vault/foreign/remmina.rs.

Passwords are encrypted as Remmina does (3DES-EDE3-CBC, key = the pref secret's first 24
bytes, IV = its next 8, plaintext NUL-padded to whole 8-byte blocks, always at least one
NUL) with Python `cryptography`'s TripleDES: an implementation independent of the Rust one.
Run from anywhere: `python3 tests/samples/import/remmina/make.py`.
"""

import base64
import os

from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives.ciphers import Cipher, modes

HERE = os.path.dirname(os.path.abspath(__file__))
SECRET = bytes(range(32))  # fixed, so the files are reproducible


def encrypt(password, secret: bytes = SECRET) -> str:
    data = password if isinstance(password, bytes) else password.encode("utf-8")
    data += b"\0" * (8 - len(data) % 8)
    encryptor = Cipher(TripleDES(secret[:24]), modes.CBC(secret[24:32])).encryptor()
    return base64.b64encode(encryptor.update(data) + encryptor.finalize()).decode()


PREF = """[remmina_pref]
save_view_mode=true
save_when_connect=true
survey=false
invisible_toolbar=false
floating_toolbar_placement=0
toolbar_placement=3
prevent_snap_welcome_message=false
fullscreen_on_auto=true
always_show_tab=true
always_show_notes=false
hide_connection_toolbar=false
hide_searchbar=false
default_action=0
scale_quality=3
ssh_loglevel=1
screenshot_path=/home/ana/Pictures
remmina_file_name=%G_%P_%N_%h
ssh_parseconfig=true
hide_toolbar=false
small_toolbutton=false
view_file_mode=0
resolutions=640x480,800x600,1024x768,1152x864,1280x960,1400x1050
keystrokes=
secret={secret}
uid=Linux+6.8.0-45-generic+x86_64+EN+Debian+12
bdate=20250315
recent_maximum=10
default_mode=0
tab_mode=0
fullscreen_toolbar_visibility=0
show_buttons_icons=0
show_menu_icons=0
auto_scroll_step=10
hostkey=65508
shortcutkey_fullscreen=102
shortcutkey_autofit=49
shortcutkey_nexttab=65363
shortcutkey_prevtab=65361
shortcutkey_scale=115
shortcutkey_viewonly=109
shortcutkey_screenshot=65481
shortcutkey_minimize=65478
shortcutkey_disconnect=65473
shortcutkey_toolbar=116
vte_font=
vte_allow_bold_text=true
vte_lines=512
grab_color_switch=false
grab_color=#00FF00
"""

# Every key Remmina 1.4 writes for a profile edited in its editor (RDP plugin settings too:
# the editor keeps the keys of every protocol the profile ever had).
NEW_DEFAULTS = {
    "password": "", "gateway_username": "", "notes_text": "", "vc": "",
    "window_height": "480", "preferipv6": "0", "ssh_tunnel_loopback": "0",
    "serialname": "", "sound": "off", "printer_overrides": "", "name": "",
    "console": "0", "colordepth": "99", "security": "", "precommand": "",
    "disable_fastpath": "0", "left-handed": "0", "postcommand": "", "multitransport": "0",
    "group": "", "server": "", "ssh_tunnel_certfile": "", "glyph-cache": "0",
    "ssh_tunnel_enabled": "0", "disableclipboard": "0", "audio-output": "",
    "parallelpath": "", "monitorids": "", "cert_ignore": "0", "gateway_server": "",
    "serialpermissive": "0", "protocol": "SSH", "ssh_tunnel_password": "",
    "old-license": "0", "resolution_mode": "2", "pth": "", "disableautoreconnect": "0",
    "loadbalanceinfo": "", "clientbuild": "", "clientname": "", "resolution_width": "0",
    "drive": "", "relax-order-checks": "0", "base-cred-for-gw": "0", "gateway_domain": "",
    "network": "none", "rdp2tcp": "", "gateway_password": "", "rdp_reconnect_attempts": "",
    "domain": "", "serialdriver": "", "restricted-admin": "0", "smartcardname": "",
    "multimon": "0", "serialpath": "", "exec": "", "enable-autostart": "0", "usb": "",
    "shareprinter": "0", "ssh_tunnel_passphrase": "", "disablepasswordstoring": "0",
    "shareparallel": "0", "quality": "0", "span": "0", "parallelname": "",
    "ssh_tunnel_auth": "0", "keymap": "", "ssh_tunnel_username": "", "execpath": "",
    "shareserial": "0", "resolution_height": "0", "timeout": "", "useproxyenv": "0",
    "sharesmartcard": "0", "freerdp_log_filters": "", "microphone": "", "dvc": "",
    "ssh_tunnel_privatekey": "", "gwtransp": "http", "ssh_tunnel_server": "",
    "ignore-tls-errors": "1", "disable-smooth-scrolling": "0", "gateway_usage": "0",
    "websockets": "0", "freerdp_log_level": "INFO", "window_width": "640",
    "window_maximize": "0", "ssh_auth": "0", "username": "", "ssh_privatekey": "",
    "ssh_certfile": "", "ssh_passphrase": "", "ssh_color_scheme": "0", "ssh_charset": "",
    "ssh_proxycommand": "", "ssh_kex_algorithms": "", "ssh_ciphers": "",
    "ssh_hostkeytypes": "", "sshlogfolder": "", "sshlogname": "", "sshlogenabled": "0",
    "sshsavesession": "0", "audiblebell": "0", "ssh_forward_x11": "0",
    "ssh_compression": "0", "ssh_stricthostkeycheck": "0", "ssh_copy_on_select": "0",
    "ssh_allow_ssh_rsa": "0", "run_line": "", "labels": "", "viewmode": "1",
}

# Remmina 1.3 (pre-1.4 key layout, new `ssh_auth` meaning: agent = 2).
V13_DEFAULTS = {
    "ssh_charset": "", "ssh_privatekey": "", "ssh_auth": "0", "ssh_username": "",
    "ssh_password": "", "ssh_passphrase": "", "ssh_enabled": "0", "ssh_loopback": "0",
    "ssh_server": "", "ssh_color_scheme": "0", "ssh_proxycommand": "",
    "ssh_kex_algorithms": "", "ssh_ciphers": "", "ssh_hostkeytypes": "",
    "ssh_stricthostkeycheck": "0", "ssh_compression": "0", "name": "", "group": "",
    "server": "", "protocol": "SSH", "precommand": "", "postcommand": "",
    "disablepasswordstoring": "0", "exec": "", "window_width": "640",
    "window_height": "480", "window_maximize": "0", "viewmode": "1", "colordepth": "8",
    "quality": "0", "keymap": "", "sound": "off", "username": "", "password": "",
}

# Remmina 1.1 (2014): the old `ssh_auth` meaning (2 = automatic public key) and no
# precommand/postcommand/disablepasswordstoring yet.
V11_DEFAULTS = {
    "ssh_auth": "0", "ssh_charset": "UTF-8", "ssh_privatekey": "", "ssh_username": "",
    "ssh_enabled": "0", "ssh_loopback": "0", "ssh_server": "", "name": "", "group": "",
    "server": "", "protocol": "SSH", "exec": "", "window_width": "640",
    "window_height": "480", "window_maximize": "0", "viewmode": "1", "colordepth": "8",
    "quality": "0", "keymap": "", "sound": "off",
}


def profile(defaults: dict, **values) -> str:
    settings = dict(defaults)
    for key, value in values.items():
        settings[key.replace("__", "-")] = value
    lines = ["[remmina]"] + [f"{key}={value}" for key, value in settings.items()]
    return "\n".join(lines) + "\n\n"


def keyfile_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")


def note(text: str) -> str:
    from urllib.parse import quote
    return quote(text, safe="")


PROFILES = {
    # Remmina 1.4+ names files by its template (%G_%P_%N_%h).
    "prod-web_ssh_web-1_web1-example-com.remmina": profile(
        NEW_DEFAULTS, name="web 1", group="Prod/Web", server="web1.example.com",
        username="deploy", password=encrypt("s3cr3t-web"), ssh_auth="0",
        labels="web,nginx", notes_text=note("Front web server.\nPatched monthly."),
    ),
    "prod-web_ssh_web-2_web2-example-com.remmina": profile(
        NEW_DEFAULTS, name="web 2", group="Prod/Web", server="web2.example.com:2222",
        username="deploy", ssh_auth="1", ssh_privatekey="/home/ana/.ssh/id_ed25519",
        ssh_certfile="/home/ana/.ssh/id_ed25519-cert.pub",
        ssh_passphrase=encrypt("key passphrase"),
    ),
    "prod-web_sftp_files_files-example-com.remmina": profile(
        NEW_DEFAULTS, name="files", group="Prod/Web", protocol="SFTP",
        server="files.example.com", username="upload", ssh_auth="5",
        password=encrypt("12345678"),
    ),
    "prod_ssh_bastion_bastion-example-com.remmina": profile(
        NEW_DEFAULTS, name="bastion", group="Prod", server="bastion.example.com:2022",
        username="jump", ssh_auth="3",
    ),
    "prod-db_ssh_db-1_2001-db8--5.remmina": profile(
        NEW_DEFAULTS, name="db 1", group="Prod/DB", server="[2001:db8::5]:2200",
        username="postgres", ssh_auth="2", exec="tmux new -A -s main",
        ssh_tunnel_enabled="1", ssh_tunnel_server="bastion.example.com:2022",
        ssh_tunnel_username="jump", ssh_tunnel_auth="0",
        ssh_tunnel_password=encrypt("pässwörd €"), ssh_compression="1",
        ssh_forward_x11="1", run_line="cd /var/lib/postgresql",
    ),
    "prod-db_ssh_db-2_db2-internal.remmina": profile(
        NEW_DEFAULTS, name="db 2", group="Prod/DB", server="db2.internal",
        username="postgres", ssh_auth="4", password=".",
        ssh_kex_algorithms="curve25519-sha256", ssh_ciphers="aes256-gcm@openssh.com",
        ssh_stricthostkeycheck="1", ssh_proxycommand="nc -X 5 -x proxy:1080 %h %p",
    ),
    "office_rdp_win-desktop_10-0-0-20.remmina": profile(
        NEW_DEFAULTS, name="win desktop", group="Office", protocol="RDP",
        server="10.0.0.20", username="ana", password=encrypt("rdp-pass"),
    ),
    "office-lab_vnc_lab-screen_10-0-0-30.remmina": profile(
        NEW_DEFAULTS, name="lab screen", group="Office/Lab", protocol="VNC",
        server="10.0.0.30:5901",
    ),
    "lab-deep-nested_ssh_no-host_.remmina": profile(
        NEW_DEFAULTS, name="no host", group="Lab/Deep/Nested", server="",
        username="root",
    ),
    "_ssh_router_2001-db8--7.remmina": profile(
        NEW_DEFAULTS, name="router", group="", server="[2001:db8::7]", username="admin",
        ssh_auth="0", password="", labels="net",
    ),
    # Remmina 1.3: the pre-1.4 layout (ssh_username, ssh_password), agent = 2.
    "1555595478523.remmina": profile(
        V13_DEFAULTS, name="old agent", group="Legacy", server="legacy1.example.com",
        ssh_username="ops", ssh_auth="2", ssh_password=encrypt("old-pass"),
    ),
    # Remmina 1.1: 2 = automatic public key, charset written by default.
    "1418041200000.remmina": profile(
        V11_DEFAULTS, name="oldest auto key", group="Legacy/2014",
        server="legacy2.example.com:2200", ssh_username="admin", ssh_auth="2",
    ),
}


def write(path: str, text: str) -> None:
    full = os.path.join(HERE, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8", newline="\n") as out:
        out.write(text)


def main() -> None:
    secret = base64.b64encode(SECRET).decode()
    write("remmina.pref", PREF.format(secret=secret))
    for name, text in PROFILES.items():
        write(os.path.join("profiles", name), text)
    write("vectors/web.b64", encrypt("s3cr3t-web") + "\n")
    write("vectors/eight.b64", encrypt("12345678") + "\n")
    write("vectors/utf8.b64", encrypt("pässwörd €") + "\n")
    # Not what Remmina writes: text after a NUL, and bytes that are not UTF-8.
    write("vectors/nul-inside.b64", encrypt(b"ab\0c") + "\n")
    write("vectors/not-utf8.b64", encrypt(b"\xff\xfe") + "\n")


if __name__ == "__main__":
    main()
