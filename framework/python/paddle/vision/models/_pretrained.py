def no_pretrained(name, pretrained):
    if pretrained:
        raise ValueError(
            "{}(pretrained=True) needs to download weights, and Eddy kernels have no "
            "network access: build it with pretrained=False and load a state dict with "
            "net.set_state_dict(paddle.load(path))".format(name))
