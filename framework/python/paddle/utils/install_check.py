"""paddle.utils.run_check(): train a tiny network for a few steps on this
device and print Paddle's lines."""


def run_check():
    import numpy as np

    import paddle
    print("Running verify PaddlePaddle program ... ")
    use_cuda = False
    try:
        use_cuda = bool(paddle.is_compiled_with_cuda())
    except Exception:
        use_cuda = False
    device = 'GPU' if use_cuda else 'CPU'
    paddle.seed(0)
    net = paddle.nn.Linear(2, 4)
    opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
    x = paddle.to_tensor(np.random.rand(8, 2).astype('float32'))
    before = None
    for _ in range(3):
        loss = paddle.mean(net(x) ** 2)
        loss.backward()
        opt.step()
        opt.clear_grad()
        if before is None:
            before = float(loss)
    after = float(paddle.mean(net(x) ** 2))
    if not np.isfinite(after) or after > before:
        raise RuntimeError("PaddlePaddle run_check failed: the check network did not train "
                           "(loss {} -> {})".format(before, after))
    print("PaddlePaddle works well on 1 {}.".format(device))
    print("PaddlePaddle is installed successfully! Let's start deep learning with "
          "PaddlePaddle now.")
