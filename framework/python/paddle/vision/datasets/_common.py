"""Where Paddle keeps downloaded datasets; kernels have no network, so a
missing file is an error that names it."""
import os

DATA_HOME = os.path.expanduser(os.path.join('~', '.cache', 'paddle', 'dataset'))


def _data_home():
    return os.path.expanduser(os.path.join('~', '.cache', 'paddle', 'dataset'))


def find_files(dataset, paths):
    """Absolute paths for the given (default) files; raises FileNotFoundError
    naming every missing one."""
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise FileNotFoundError(
            "{}: dataset files not found: {}. Eddy kernels have no network access, so "
            "datasets are not downloaded: put the files there (Paddle's layout) or pass "
            "their paths.".format(dataset, ', '.join(missing)))
    return paths
