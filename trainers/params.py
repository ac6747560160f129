"""scikit-learn's get_params/set_params convention without depending on it."""
import inspect


class ParamsMixin:
    @classmethod
    def _param_names(cls):
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values()
                if p.name != "self" and p.kind == p.KEYWORD_ONLY]

    def get_params(self, deep=True):
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        valid = self._param_names()
        for k, v in params.items():
            if k not in valid:
                raise ValueError(f"invalid parameter {k!r} for {type(self).__name__}; "
                                 f"valid: {', '.join(valid)}")
            setattr(self, k, v)
        return self

    def __repr__(self):
        sig = inspect.signature(type(self).__init__)
        changed = [f"{k}={v!r}" for k, v in self.get_params().items()
                   if sig.parameters[k].default is not v and sig.parameters[k].default != v]
        return f"{type(self).__name__}({', '.join(changed)})"
