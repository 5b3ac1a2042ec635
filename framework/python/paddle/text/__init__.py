"""paddle.text: the NLP datasets of Paddle's paddle.text (Imdb, Imikolov,
UCIHousing, Movielens, Conll05st, WMT14, WMT16), read from local files in
Paddle's formats. Kernels have no network: download=True downloads nothing,
and a missing file is a FileNotFoundError that names it."""
from .datasets import (Conll05st, Imdb, Imikolov, Movielens, UCIHousing, WMT14,  # noqa: F401
                       WMT16)

__all__ = ['Conll05st', 'Imdb', 'Imikolov', 'Movielens', 'UCIHousing', 'WMT14', 'WMT16']
