"""paddle.utils.run_check(): train a tiny network for a few steps on this
machine's device (a GPU when one is usable, else the CPU) and print
Paddle's lines."""


def _train_steps(paddle, np, place):
    """Three SGD steps of a Linear(2, 4) on `place`; the losses before and after."""
    paddle.seed(0)
    net = paddle.nn.Linear(2, 4)
    if place.is_gpu_place():
        for p in net.parameters():
            if not p.place.is_gpu_place():
                raise RuntimeError("PaddlePaddle run_check failed: a parameter was made on {} "
                                   "after set_device('gpu')".format(p.place))
    opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
    x = paddle.to_tensor(np.random.RandomState(0).rand(8, 2).astype('float32'), place=place)
    before = None
    for _ in range(3):
        loss = paddle.mean(net(x) ** 2)
        if loss.place != place:
            raise RuntimeError("PaddlePaddle run_check failed: the loss is on {}, not {}".format(
                loss.place, place))
        loss.backward()
        opt.step()
        opt.clear_grad()
        if before is None:
            before = float(loss)
    after = float(paddle.mean(net(x) ** 2))
    if not np.isfinite(after) or after > before:
        raise RuntimeError("PaddlePaddle run_check failed: the check network did not train "
                           "(loss {} -> {})".format(before, after))


def run_check():
    import numpy as np

    import paddle
    print("Running verify PaddlePaddle program ... ")
    use_cuda = bool(paddle.is_compiled_with_cuda())
    if not use_cuda:
        _train_steps(paddle, np, paddle.CPUPlace())
        print("PaddlePaddle works well on 1 CPU.")
    else:
        prev = paddle.get_device()
        place = paddle.set_device('gpu:0')
        try:
            _train_steps(paddle, np, place)
            paddle.device.cuda.synchronize()
        finally:
            paddle.set_device(prev)
        print("PaddlePaddle works well on 1 GPU.")
    print("PaddlePaddle is installed successfully! Let's start deep learning with "
          "PaddlePaddle now.")
