"""paddle.regularizer: weight decay given to an optimizer's weight_decay (or a
ParamAttr's regularizer). L2Decay(coeff) adds coeff*p to the gradient;
L1Decay(coeff) adds coeff*sign(p)."""
import numbers

__all__ = ['L1Decay', 'L2Decay', 'WeightDecayRegularizer']


class WeightDecayRegularizer:
    def __init__(self, coeff=0.0):
        if isinstance(coeff, bool) or not isinstance(coeff, numbers.Real):
            raise TypeError("coeff should be a float, got {}".format(type(coeff).__name__))
        if coeff < 0:
            raise ValueError("coeff should be >= 0, got {}".format(coeff))
        self._coeff = float(coeff)
        self._regularization_coeff = self._coeff

    def __str__(self):
        return "{}, coeff={:f}".format(self.__class__.__name__, self._coeff)


class L1Decay(WeightDecayRegularizer):
    pass


class L2Decay(WeightDecayRegularizer):
    pass
