"""Decoder, BeamSearchDecoder and dynamic_decode (Paddle's paddle/nn/decode.py):
beam search over any RNN cell, in dynamic-graph mode. Each step runs the
cell on batch*beam rows, takes log-softmax scores, keeps finished beams on
end_token, picks the top beam_size of beam*vocab candidates per batch
entry and reorders the cell states by their source beam; finalize walks the
parents back with gather_tree."""
import collections

import numpy as np

from paddle._lazy import paddle as _paddle

__all__ = ['Decoder', 'BeamSearchDecoder', 'dynamic_decode']


def _map(fn, *nests):
    """map_structure over nested lists/tuples/namedtuples."""
    first = nests[0]
    if isinstance(first, tuple) and hasattr(first, '_fields'):
        return type(first)(*[_map(fn, *parts) for parts in zip(*nests)])
    if isinstance(first, (list, tuple)):
        return type(first)(_map(fn, *parts) for parts in zip(*nests))
    return fn(*nests)


class _Acc:
    """One output's per-step tensors (a leaf for _map, unlike a list)."""

    def __init__(self, x):
        self.items = [x]


def _flatten(nest):
    if isinstance(nest, (list, tuple)):
        return [leaf for item in nest for leaf in _flatten(item)]
    return [nest]


class Decoder:
    """The protocol dynamic_decode drives: initialize(inits) -> (inputs,
    states, finished); step(time, inputs, states, **kwargs) -> (outputs,
    next_states, next_inputs, finished); finalize(outputs, states, lengths)."""

    def initialize(self, inits):
        raise NotImplementedError

    def step(self, time, inputs, states, **kwargs):
        raise NotImplementedError

    def finalize(self, outputs, final_states, sequence_lengths):
        raise NotImplementedError

    @property
    def tracks_own_finished(self):
        return False


class BeamSearchDecoder(Decoder):
    """BeamSearchDecoder(cell, start_token, end_token, beam_size,
    embedding_fn=None, output_fn=None)."""

    OutputWrapper = collections.namedtuple('OutputWrapper',
                                           ('scores', 'predicted_ids', 'parent_ids'))
    StateWrapper = collections.namedtuple('StateWrapper',
                                          ('cell_states', 'log_probs', 'finished', 'lengths'))
    kinf = 1e9

    def __init__(self, cell, start_token, end_token, beam_size, embedding_fn=None,
                 output_fn=None):
        if int(beam_size) <= 0:
            raise ValueError("BeamSearchDecoder: beam_size must be positive, got {}".format(
                beam_size))
        self.cell = cell
        self.embedding_fn = embedding_fn
        self.output_fn = output_fn
        self.start_token = int(start_token)
        self.end_token = int(end_token)
        self.beam_size = int(beam_size)

    @staticmethod
    def tile_beam_merge_with_batch(x, beam_size):
        """[batch, ...] -> [batch * beam_size, ...], each row repeated beam_size times."""
        paddle = _paddle()
        x = paddle.unsqueeze(x, [1])
        times = [1] * x.ndim
        times[1] = beam_size
        x = paddle.tile(x, times)
        return paddle.reshape(x, [-1] + list(x.shape[2:]))

    def _split_batch_beams(self, x):
        return _paddle().reshape(x, [-1, self.beam_size] + list(x.shape[1:]))

    def _merge_batch_beams(self, x):
        return _paddle().reshape(x, [-1] + list(x.shape[2:]))

    def _expand_to_beam_size(self, x):
        paddle = _paddle()
        x = paddle.unsqueeze(x, [1])
        times = [1] * x.ndim
        times[1] = self.beam_size
        return paddle.tile(x, times)

    def _mask_probs(self, probs, finished):
        """Finished beams may only continue with end_token (log prob 0)."""
        paddle = _paddle()
        f = paddle.unsqueeze(paddle.cast(finished, probs.dtype), [2])
        return f * self.noend_mask_tensor + probs * (1.0 - f)

    def _gather(self, x, indices):
        """x [batch, beam(, ...)] rows picked per batch entry by indices [batch, k]."""
        paddle = _paddle()
        idx = indices
        if x.ndim > 2:
            idx = paddle.reshape(idx, list(idx.shape) + [1] * (x.ndim - 2))
            idx = paddle.expand(idx, list(indices.shape) + list(x.shape[2:]))
        if x.dtype == paddle.bool:
            return paddle.cast(paddle.take_along_axis(paddle.cast(x, 'int32'), idx, 1), 'bool')
        return paddle.take_along_axis(x, idx, 1)

    def initialize(self, initial_cell_states):
        paddle = _paddle()
        state = _flatten(initial_cell_states)[0]
        self.batch_size = state.shape[0]
        cell_states = _map(self._expand_to_beam_size, initial_cell_states)
        inputs = paddle.full([self.batch_size, self.beam_size], self.start_token, dtype='int64')
        row = np.array([[0.0] + [-self.kinf] * (self.beam_size - 1)],
                       dtype=paddle.get_default_dtype())
        log_probs = paddle.to_tensor(np.tile(row, (self.batch_size, 1)))
        finished = paddle.full([self.batch_size, self.beam_size], False, dtype='bool')
        lengths = paddle.zeros_like(inputs)
        if self.embedding_fn is not None:
            inputs = self.embedding_fn(inputs)
        return inputs, self.StateWrapper(cell_states, log_probs, finished, lengths), finished

    def _beam_search_step(self, time, logits, next_cell_states, beam_state):
        paddle = _paddle()
        self.vocab_size = logits.shape[-1]
        noend = np.full([self.vocab_size], -self.kinf, dtype=paddle.get_default_dtype())
        if not 0 <= self.end_token < self.vocab_size:
            raise ValueError("BeamSearchDecoder: end_token {} is outside the vocabulary of "
                             "{} logits".format(self.end_token, self.vocab_size))
        noend[self.end_token] = 0.0
        self.noend_mask_tensor = paddle.to_tensor(noend)
        step_log_probs = paddle.nn.functional.log_softmax(logits)
        step_log_probs = self._mask_probs(step_log_probs, beam_state.finished)
        log_probs = step_log_probs + paddle.unsqueeze(beam_state.log_probs, [2])
        scores = paddle.reshape(log_probs, [-1, self.beam_size * self.vocab_size])
        topk_scores, topk_indices = paddle.topk(scores, k=self.beam_size)
        beam_indices = paddle.floor_divide(topk_indices, paddle.full_like(topk_indices,
                                                                          self.vocab_size))
        token_indices = topk_indices - beam_indices * self.vocab_size
        next_log_probs = paddle.take_along_axis(scores, topk_indices, 1)
        next_cell_states = _map(lambda x: self._gather(x, beam_indices), next_cell_states)
        next_finished = self._gather(beam_state.finished, beam_indices)
        next_lengths = self._gather(beam_state.lengths, beam_indices)
        next_lengths = next_lengths + paddle.cast(paddle.logical_not(next_finished),
                                                  next_lengths.dtype)
        next_finished = paddle.logical_or(
            next_finished, paddle.equal(token_indices, paddle.full_like(token_indices,
                                                                        self.end_token)))
        return (self.OutputWrapper(topk_scores, token_indices, beam_indices),
                self.StateWrapper(next_cell_states, next_log_probs, next_finished,
                                  next_lengths))

    def step(self, time, inputs, states, **kwargs):
        inputs = _map(self._merge_batch_beams, inputs)
        cell_states = _map(self._merge_batch_beams, states.cell_states)
        cell_outputs, next_cell_states = self.cell(inputs, cell_states, **kwargs)
        cell_outputs = _map(self._split_batch_beams, cell_outputs)
        next_cell_states = _map(self._split_batch_beams, next_cell_states)
        if self.output_fn is not None:
            cell_outputs = self.output_fn(cell_outputs)
        out, state = self._beam_search_step(time, cell_outputs, next_cell_states, states)
        sample_ids = out.predicted_ids
        sample_ids.stop_gradient = True
        next_inputs = self.embedding_fn(sample_ids) if self.embedding_fn is not None \
            else sample_ids
        return out, state, next_inputs, state.finished

    def finalize(self, outputs, final_states, sequence_lengths):
        paddle = _paddle()
        ids = paddle.nn.functional.gather_tree(outputs.predicted_ids, outputs.parent_ids)
        return ids, final_states

    @property
    def tracks_own_finished(self):
        return True


def dynamic_decode(decoder, inits=None, max_step_num=None, output_time_major=False,
                   impute_finished=False, is_test=False, return_length=False, **kwargs):
    """Run decoder step by step until every entry is finished or after
    max_step_num + 1 steps; stack the step outputs on a time axis (batch
    first unless output_time_major), finalize, and return (outputs,
    final_states) plus the sequence lengths when return_length."""
    paddle = _paddle()
    if max_step_num is not None and int(max_step_num) < 0:
        raise ValueError("dynamic_decode: max_step_num must be non-negative")
    inputs, states, finished = decoder.initialize(inits)
    sequence_lengths = paddle.cast(paddle.zeros_like(finished), 'int64')
    outputs = None
    step = 0
    while not bool(paddle.all(finished)):
        time = paddle.full([1], step, dtype='int64')
        step_outputs, next_states, next_inputs, next_finished = decoder.step(
            time, inputs, states, **kwargs)
        if not decoder.tracks_own_finished:
            next_finished = paddle.logical_or(next_finished, finished)
            next_lengths = sequence_lengths + paddle.cast(paddle.logical_not(finished),
                                                          sequence_lengths.dtype)
            if impute_finished:
                keep = finished

                def copy(old, new, keep=keep):
                    m = paddle.cast(keep, 'float32' if old.dtype == paddle.bool else old.dtype)
                    m = paddle.reshape(m, list(m.shape) + [1] * (old.ndim - m.ndim))
                    if old.dtype == paddle.bool:
                        out = paddle.cast(old, 'float32') * m + \
                            paddle.cast(new, 'float32') * (1.0 - m)
                        return paddle.cast(out, 'bool')
                    return old * m + new * (1.0 - m)
                next_states = _map(copy, states, next_states)
        else:
            next_lengths = getattr(next_states, 'lengths', sequence_lengths)
        if outputs is None:
            outputs = _map(_Acc, step_outputs)
        else:
            _map(lambda x, acc: acc.items.append(x), step_outputs, outputs)
        inputs, states, finished, sequence_lengths = (next_inputs, next_states, next_finished,
                                                      next_lengths)
        step += 1
        if max_step_num is not None and step > int(max_step_num):
            break
    if outputs is None:
        raise ValueError("dynamic_decode: every entry was finished before the first step")
    final_outputs = _map(lambda acc: paddle.stack(acc.items, axis=0), outputs)
    final_states = states
    try:
        final_outputs, final_states = decoder.finalize(final_outputs, final_states,
                                                       sequence_lengths)
    except NotImplementedError:
        pass
    if not output_time_major:
        final_outputs = _map(lambda x: paddle.transpose(x, [1, 0] + list(range(2, x.ndim))),
                             final_outputs)
    if return_length:
        return final_outputs, final_states, sequence_lengths
    return final_outputs, final_states
