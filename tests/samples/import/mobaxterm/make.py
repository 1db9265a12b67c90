#!/usr/bin/env python3
"""Writes the MobaXterm samples as MobaXterm writes them (ANSI code page, CRLF):
sessions.mxtsessions (an export: 14 sessions in nested folders, Windows-1252),
MobaXterm.ini (the portable edition's settings, with [Credentials] and [Passwords]) and
gbk.mxtsessions (a Chinese Windows' export: GBK bytes, folder and session names in Chinese).

Session lines follow MobaXterm's layout: `Name= #<icon>#<type>%<fields>#<terminal>#<start
mode>#<comment>#<colour>`, SSH fields at the positions Sessionator's MobaXterm writer
(Ruzgfpegk/Sessionator, Formats/MobaXterm/SSH.php and SFTP.php) documents, with the default
values a real export carries.

    python3 tests/samples/import/mobaxterm/make.py
"""

import os

HERE = os.path.dirname(os.path.abspath(__file__))

TERMINAL = ("#MobaFont%10%0%0%-1%15%236,236,236%30,30,30%180,180,192%0%-1%0%%xterm%-1%0%"
            "_Std_Colors_0_%80%24%0%1%-1%<none>%%0%0%-1%0%")


def ssh(host="", port="22", user="", x11="-1", command="", gw_hosts="", gw_ports="22",
        gw_users="", key="", gw_keys="", proxy_type="0", proxy_host="", proxy_port="1080",
        environment="0", local_proxy="", agent_fwd="0", comment=" "):
    fields = [
        "0", host, port, user, "", x11, "-1", command, gw_hosts, gw_ports, gw_users, "0",
        "0" if user else "-1", environment, key, gw_keys, "-1", "0", "0", proxy_type,
        proxy_host, proxy_port, "", "0", "0", "1", local_proxy, "0", "", "", "", "0", "-1",
        "-1", agent_fwd,
    ]
    return " #109#" + "%".join(fields) + TERMINAL + "#0#" + comment + "#-1"


def sftp(host, port="22", user="", folder="", key="", proxy_type="0", proxy_host=""):
    fields = ["7", host, port, user, "-1", "0", folder, "0", "0", key, proxy_type,
              proxy_host, "1080", "", "", "", "-1"]
    return " #140#" + "%".join(fields) + "#MobaFont%10%0%0%-1%15%236,236,236%30,30,30" + \
        "%180,180,192%0%-1%0%%xterm%-1%0%_Std_Colors_0_%80%24%0%1%-1%<none>%%0%0%-1%0%#0# #-1"


def other(icon, kind, host, port, user=""):
    return f" #{icon}#{kind}%{host}%{port}%{user}%0%0%%%%%0%0%%1080%%%0%-1%0" + TERMINAL + "#0# #-1"


BOOKMARKS = [
    ("", "42", [
        ("bastion", ssh("bastion.example.com", user="ops", key="_ProfileDir_\\.ssh\\ops.ppk")),
        ("local shell", " #131#10%Bash%%Interactive shell%" + TERMINAL + "#0# #-1"),
    ]),
    ("Prod", "41", [
        ("web 1", ssh("web1.example.com", "2222", "deploy",
                      command="tail -f /var/log/syslog__PTVIRG__ echo done",
                      gw_hosts="bastion.example.com", gw_users="ops",
                      comment=" front web__DIEZE__1 ")),
        ("web 2", ssh("web2.example.com", user="deploy", x11="0", agent_fwd="-1")),
    ]),
    ("Prod\\DB", "41", [
        ("db primary", ssh("10.0.0.5", user="[dbcred]",
                           gw_hosts="gw1.example.com__PIPE__gw2.example.com",
                           gw_ports="22__PIPE__2022", gw_users="alice__PIPE__bob",
                           gw_keys="_CurrentDrive_:\\keys\\gw1.ppk",
                           key="_CurrentDrive_:\\keys\\db.ppk")),
        ("db rdp", other("91", "4", "10.0.0.7", "3389", "administrator")),
        ("files", sftp("sftp.example.com", user="upload", folder="/srv/www",
                       key="_ProfileDir_\\.ssh\\up.ppk")),
    ]),
    ("Staging\\Web\\Old", "41", [
        ("old web", ssh("old.staging.example.com", "2200", "root", proxy_type="2",
                        proxy_host="socks.example.com", x11="0")),
        ("vnc", other("128", "5", "desk.example.com", "5900")),
        ("switch", other("98", "1", "192.168.1.2", "23", "admin")),
        ("console", other("131", "8", "COM3", "115200")),
        ("ubuntu", " #151#14%Ubuntu%0%100%-1%%%%%0%0%%1080%%0%-1%0" + TERMINAL + "#0# #-1"),
    ]),
    ("Caf\u00e9", "41", [
        ("caf\u00e9 host", ssh("cafe.example.com", user="jos\u00e9", x11="0",
                               environment="1", local_proxy="nc __PERCENT__h __PERCENT__p")),
        ("no host", ssh("", user="nobody", x11="0")),
    ]),
]


def mxtsessions(bookmarks) -> str:
    lines = []
    for index, (folder, img, sessions) in enumerate(bookmarks):
        lines.append("[Bookmarks]" if index == 0 else f"[Bookmarks_{index}]")
        lines.append(f"SubRep={folder}")
        lines.append(f"ImgNum={img}")
        lines += [f"{name}={value}" for name, value in sessions]
        lines.append("")
    return "\r\n".join(lines) + "\r\n"


def main() -> None:
    with open(os.path.join(HERE, "sessions.mxtsessions"), "wb") as out:
        out.write(mxtsessions(BOOKMARKS).encode("cp1252"))
    ini = "[Misc]\r\nPassword=\r\nDarkMode=1\r\nLastUpdateCheck=0\r\n\r\n" + \
        mxtsessions(BOOKMARKS[:3]) + \
        "\r\n[Credentials]\r\ndbcred=postgres:QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n" \
        "spare=backup:\r\n\r\n[Passwords]\r\nssh22:deploy@web1.example.com=" \
        "TWFueSBoYW5kcyBtYWtlIGxpZ2h0IHdvcms=\r\n\r\n[Colors]\r\nDefaultColorScheme=0\r\n" \
        "ForegroundColour=236,236,236\r\nBackgroundColour=30,30,30\r\n"
    with open(os.path.join(HERE, "MobaXterm.ini"), "wb") as out:
        out.write(ini.encode("cp1252"))
    chinese = [
        ("\u751f\u4ea7\\\u6570\u636e\u5e93", "41", [
            ("\u670d\u52a1\u5668\u4e00", ssh("cn1.example.com", user="root", x11="0")),
            ("\u670d\u52a1\u5668\u4e8c", ssh("cn2.example.com", "2222", "\u7ba1\u7406\u5458", x11="0")),
        ]),
    ]
    with open(os.path.join(HERE, "gbk.mxtsessions"), "wb") as out:
        out.write(mxtsessions(chinese).encode("gbk"))


if __name__ == "__main__":
    main()
