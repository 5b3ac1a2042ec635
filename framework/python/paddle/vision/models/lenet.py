"""LeNet as in paddle.vision.models (input [N, 1, 28, 28])."""
import paddle
from paddle import nn


class LeNet(nn.Layer):
    """LeNet(num_classes=10): conv(1->6, 3, pad 1)-relu-maxpool,
    conv(6->16, 5)-relu-maxpool, then Linear 400-120-84-num_classes
    (num_classes <= 0 keeps only the features)."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.num_classes = num_classes
        self.features = nn.Sequential(
            nn.Conv2D(1, 6, 3, stride=1, padding=1),
            nn.ReLU(),
            nn.MaxPool2D(2, 2),
            nn.Conv2D(6, 16, 5, stride=1, padding=0),
            nn.ReLU(),
            nn.MaxPool2D(2, 2))
        if num_classes > 0:
            self.fc = nn.Sequential(
                nn.Linear(400, 120),
                nn.Linear(120, 84),
                nn.Linear(84, num_classes))

    def forward(self, inputs):
        x = self.features(inputs)
        if self.num_classes > 0:
            x = paddle.flatten(x, 1)
            x = self.fc(x)
        return x
