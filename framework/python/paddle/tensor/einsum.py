"""paddle.einsum (Paddle's paddle/tensor/einsum.py): not supported yet."""


def einsum(equation, *operands):
    raise NotImplementedError("paddle.einsum is not supported by this build yet")
