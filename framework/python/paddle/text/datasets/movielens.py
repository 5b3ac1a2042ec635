"""Movielens: the MovieLens 1M ratings (ml-1m.zip)."""
import re
import zipfile

import numpy as np

from ...io import Dataset
from ._common import check_mode, data_file as _data_file

age_table = [1, 18, 25, 35, 45, 50, 56]


class MovieInfo:
    def __init__(self, index, categories, title):
        self.index = int(index)
        self.categories = categories
        self.title = title

    def value(self, categories_dict, movie_title_dict):
        return [[self.index], [categories_dict[c] for c in self.categories],
                [movie_title_dict[w.lower()] for w in self.title.split()]]

    def __repr__(self):
        return "<MovieInfo id({}), title({}), categories({})>".format(
            self.index, self.title, self.categories)


class UserInfo:
    def __init__(self, index, gender, age, job_id):
        self.index = int(index)
        self.is_male = gender == 'M'
        self.age = age_table.index(int(age))
        self.job_id = int(job_id)

    def value(self):
        return [[self.index], [0 if self.is_male else 1], [self.age], [self.job_id]]

    def __repr__(self):
        return "<UserInfo id({}), gender({}), age({}), job({})>".format(
            self.index, "M" if self.is_male else "F", age_table[self.age], self.job_id)


class Movielens(Dataset):
    """Movielens(data_file=None, mode='train', test_ratio=0.1, rand_seed=0,
    download=True): each rating goes to 'test' with probability test_ratio
    (numpy's generator seeded with rand_seed, as Paddle does). Items:
    (user id, gender, age index, job, movie id, category ids, title word
    ids, [rating * 2 - 5]) as arrays. Title words and categories are
    numbered in sorted order (Paddle numbers a set, whose order varies from
    run to run). data_file defaults to
    ~/.cache/paddle/dataset/sentiment/ml-1m.zip."""

    def __init__(self, data_file=None, mode='train', test_ratio=0.1, rand_seed=0,
                 download=True):
        self.mode = check_mode(mode, ('train', 'test'))
        if not 0.0 <= float(test_ratio) <= 1.0:
            raise ValueError("test_ratio should be in [0, 1], got {}".format(test_ratio))
        self.test_ratio = float(test_ratio)
        self.rand_seed = rand_seed
        self.data_file = _data_file('Movielens', data_file, 'sentiment', 'ml-1m.zip')
        np.random.seed(rand_seed)
        self._load_meta_info()
        self._load_data()

    def _load_meta_info(self):
        pattern = re.compile(r'^(.*)\((\d+)\)$')
        self.movie_info, self.user_info = {}, {}
        title_words, categories = set(), set()
        with zipfile.ZipFile(self.data_file) as package:
            with package.open('ml-1m/movies.dat') as movie_file:
                for line in movie_file:
                    line = line.decode('latin')
                    movie_id, title, cats = line.strip().split('::')
                    cats = cats.split('|')
                    categories.update(cats)
                    m = pattern.match(title)
                    title = m.group(1) if m else title
                    self.movie_info[int(movie_id)] = MovieInfo(movie_id, cats, title)
                    title_words.update(w.lower() for w in title.split())
            with package.open('ml-1m/users.dat') as user_file:
                for line in user_file:
                    uid, gender, age, job, _ = line.decode('latin').strip().split('::')
                    self.user_info[int(uid)] = UserInfo(uid, gender, age, job)
        self.movie_title_dict = {w: i for i, w in enumerate(sorted(title_words))}
        self.categories_dict = {c: i for i, c in enumerate(sorted(categories))}

    def _load_data(self):
        self.data = []
        is_test = self.mode == 'test'
        with zipfile.ZipFile(self.data_file) as package:
            with package.open('ml-1m/ratings.dat') as rating:
                for line in rating:
                    line = line.decode('latin')
                    if (np.random.random() < self.test_ratio) == is_test:
                        uid, mov_id, score, _ = line.strip().split('::')
                        mov = self.movie_info[int(mov_id)]
                        usr = self.user_info[int(uid)]
                        self.data.append(usr.value() +
                                         mov.value(self.categories_dict,
                                                   self.movie_title_dict) +
                                         [[float(score) * 2 - 5.0]])

    def __getitem__(self, idx):
        return tuple(np.array(d) for d in self.data[idx])

    def __len__(self):
        return len(self.data)
