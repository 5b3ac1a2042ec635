"""Shared checks of the text datasets."""
import os

from ...vision.datasets._common import _data_home, find_files  # noqa: F401


def data_file(name, given, *default):
    """given, or the default under ~/.cache/paddle/dataset; it must exist."""
    path = given if given is not None else os.path.join(_data_home(), *default)
    find_files(name, [path])
    return path


def check_mode(mode, allowed):
    if not isinstance(mode, str) or mode.lower() not in allowed:
        raise ValueError("mode should be one of {}, but got {!r}".format(list(allowed), mode))
    return mode.lower()
