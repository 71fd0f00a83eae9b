"""Private directories for run logs and the result spool: 0700, owned by this process's user.

A directory that belongs to another user, or sits below one owned by a user other than this
one or root (who could swap it), is refused (PermissionError naming the directory); an own
directory with group or other bits is narrowed to 0700 with a warning.
"""

from __future__ import annotations

import logging
import os
import stat

log = logging.getLogger("jobwheel")


def make_private_dir(path: str) -> str:
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise PermissionError(f"{path}: not a directory (symlinks are refused)")
    uid = os.geteuid()
    if st.st_uid != uid:
        raise PermissionError(f"{path}: owned by uid {st.st_uid}, not by this process (uid {uid})")
    p = parent
    while True:
        pst = os.stat(p)
        if pst.st_uid not in (0, uid):
            raise PermissionError(
                f"{path}: below {p}, owned by uid {pst.st_uid} (neither root nor uid {uid})"
            )
        if pst.st_mode & stat.S_IWOTH and not pst.st_mode & stat.S_ISVTX:
            log.warning("%s: below %s, which others may write (no sticky bit)", path, p)
        up = os.path.dirname(p)
        if up == p:
            break
        p = up
    if st.st_mode & 0o077:
        log.warning("%s: had mode %o; narrowed to 0700", path, stat.S_IMODE(st.st_mode))
        os.chmod(path, 0o700)
    return path


def open_private_file(path: str, flags: int) -> int:
    """os.open with O_NOFOLLOW and mode 0600 (for new files)."""
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
