"""A tar archive read by member name, reopened in each process: DataLoader
workers are forks, and a file object shared across them would share its
offset."""
import os
import tarfile


class TarMembers:
    def __init__(self, path):
        self.path = path
        self._pid = None
        self._tar = None
        self._members = None

    def _open(self):
        if self._pid != os.getpid():
            self._tar = tarfile.open(self.path)
            self._members = {m.name: m for m in self._tar.getmembers()}
            self._pid = os.getpid()
        return self._tar

    def names(self):
        self._open()
        return self._members.keys()

    def read(self, name, dataset):
        tar = self._open()
        m = self._members.get(name)
        if m is None:
            raise FileNotFoundError("{}: {} has no member {}".format(dataset, self.path, name))
        return tar.extractfile(m).read()

    def __getstate__(self):
        return {'path': self.path}

    def __setstate__(self, state):
        self.__init__(state['path'])
