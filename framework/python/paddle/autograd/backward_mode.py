"""paddle.autograd.backward(tensors, grad_tensors=None, retain_graph=False)."""
from paddle import _C


def backward(tensors, grad_tensors=None, retain_graph=False):
    """Backpropagate from every tensor in tensors (each with its gradient in
    grad_tensors, None meaning ones) and accumulate into leaves' .grad."""
    T = _C.Tensor
    ts = [tensors] if isinstance(tensors, T) else list(tensors)
    if not ts:
        raise ValueError("backward: tensors must not be empty")
    if grad_tensors is None:
        gs = [None] * len(ts)
    else:
        gs = [grad_tensors] if isinstance(grad_tensors, T) else list(grad_tensors)
        if len(gs) != len(ts):
            raise ValueError("backward: {} grad_tensors for {} tensors".format(len(gs),
                                                                               len(ts)))
    if len(set(id(t) for t in ts)) != len(ts):
        raise ValueError("backward: the same Tensor appears twice in tensors")
    for i, (t, g) in enumerate(zip(ts, gs)):
        if not isinstance(t, T):
            raise TypeError("backward: tensors[{}] is not a Tensor".format(i))
        t.backward(g, retain_graph=bool(retain_graph) or i < len(ts) - 1)
