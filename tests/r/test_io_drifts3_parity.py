"""Model-file, state and predict calls that gave different results in Python and R (found by
reading the two front ends side by side; issue 29), now alike: ag_predict's check order with a
return_state model; a model with only ggmlR's params() given to ag_load_model or built by its
model_fn; a logical y matrix in ag_accuracy; a factor / Categorical y on a model without classes;
an optimizer state's names as one string, a null type / kind, a slot given as one plain vector; a
state dict's sub-layer test; parameters() returning one tensor."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import same_refusal  # noqa: E402

import pyggmlr as pg  # noqa: E402

_X = np.array([[1.0, 2, 3, 4], [4, 3, 2, 1]])
_W3 = np.array([[1.0, -1], [-1, 1], [0.5, 0.5]])


class _ReturnState:  # an LSTM-like layer with return_state set
    return_state, name = True, "lstm"

    def parameters(self):
        return {"W": pg.ag_param(np.ones((2, 2)))}

    def forward(self, x):
        return x


_R_RETURN_STATE = (
    "m <- new.env(); m$return_state <- TRUE; m$name <- 'lstm'\n"
    "m$parameters <- function() list(W = ag_param(matrix(1, 2, 2))); m$forward <- function(x) x\n"
)
_RS_TEXT = (
    "ag_predict: the model (lstm) has return_state set: its forward returns (output, h_n[, c_n]), "
    "not a tensor; use return_state = FALSE for this call (the same weights)"
)


@pytest.mark.parametrize(
    "kw, rkw", [({"batch_size": 0}, "x, batch_size = 0"), ({"x": np.zeros((2, 0))}, "matrix(0, 2, 0)")],
    ids=["batch_size 0", "no samples"],
)  # fmt: skip
def test_predict_refuses_a_return_state_model_before_x_and_batch_size(kw, rkw):
    """D8: R refused the model first, Python x / batch_size first; now the model (its order)."""
    args = {"x": _X, **kw}
    same_refusal(lambda: pg.ag_predict(_ReturnState(), **args), f"ag_predict(m, {rkw})",
                 pg.ArgumentError, _RS_TEXT, setup=_R_RETURN_STATE, x=_X)  # fmt: skip


class _ParamsOnly:  # ggmlR's list model: params() and forward, no parameters()
    def __init__(self, w):
        self.W = pg.ag_param(np.asarray(w, dtype=float))

    def params(self):
        return {"W": self.W}

    def forward(self, x):
        return pg.ag_matmul(self.W, x)


def test_load_model_takes_a_params_only_model_as_model_and_from_model_fn(tmp_path):
    """D10: R took a params()-only object given as model_fn as the model and accepted one built
    by model_fn; Python refused both."""
    p = str(tmp_path / "m.safetensors")
    pg.ag_save_model(_ParamsOnly(np.full((2, 2), 0.25)), p)
    got_py = [
        pg.ag_load_model(p, _ParamsOnly(np.zeros((2, 2)))).W.numpy(),
        pg.ag_load_model(p, lambda: _ParamsOnly(np.zeros((2, 2)))).W.numpy(),
    ]
    got_r = r.run(
        "P <- function() { W <- ag_param(matrix(0, 2, 2))\n"
        "  list(params = function() list(W = W), forward = function(x) ag_matmul(W, x)) }\n"
        "list(ag_load_model(path, P())$params()$W$data, ag_load_model(path, P)$params()$W$data)",
        path=p,
    )
    for a, b in zip(got_py, got_r):
        assert np.array_equal(a, np.full((2, 2), 0.25)) and np.array_equal(np.asarray(b), a)


def test_accuracy_refuses_a_logical_y_matrix():
    """D11: R counted a 1 x n logical matrix as class ids 0 / 1, Python refused it."""
    y = np.array([[True, False, True, False]])
    same_refusal(lambda: pg.ag_accuracy(_ParamsOnly(_W3), _X, y),
                 "ag_accuracy(m, x, matrix(c(TRUE, FALSE, TRUE, FALSE), 1))", pg.ArgumentError,
                 "ag_accuracy: y must be 0-based class ids or a one-hot matrix, got booleans",
                 setup="W <- ag_param(w); m <- list(params = function() list(W = W), "
                 "forward = function(x) ag_matmul(W, x))\n", x=_X, w=_W3)  # fmt: skip


class _Cat:  # a pandas Categorical, duck-typed (fit/labels.py)
    def __init__(self, codes, categories):
        self.codes, self.categories = np.asarray(codes), list(categories)


def test_factor_y_on_a_model_without_classes_is_its_codes():
    """D12: R used a factor's codes (as.integer(y) - 1); Python refused a Categorical of strings."""
    y = _Cat([0, 1, 2, 0], ["c", "a", "b"])  # c a b c, as the factor below
    m = _ParamsOnly(_W3)
    py = [pg.ag_accuracy(m, _X, y), pg.ag_evaluate(m, _X, y, loss="cross_entropy")["loss"]]
    got = r.run(
        "W <- ag_param(w); m <- list(params = function() list(W = W), "
        "forward = function(x) ag_matmul(W, x))\n"
        "y <- factor(c('c', 'a', 'b', 'c'), levels = c('c', 'a', 'b'))\n"
        "c(ag_accuracy(m, x, y), ag_evaluate(m, x, y, loss = 'cross_entropy')$loss)",
        x=_X, w=_W3,
    )  # fmt: skip
    assert py == [float(v) for v in got]
    assert py[0] == pg.ag_accuracy(m, _X, np.array([0.0, 1, 2, 0]))  # the codes' result


def test_optimizer_state_names_as_one_string():
    """D13: a one-parameter state whose names is one string ("names": "w" in a JSON file)."""
    o = pg.optimizer_adam({"w": pg.ag_param(np.ones((2, 2)))})
    st = o.state()
    st["names"] = "w"
    assert o.load_state(st) is True
    assert (
        r.run(
            "o <- optimizer_adam(list(w = ag_param(matrix(1, 2, 2)))); st <- o$state()\n"
            "st$names <- 'w'; o$load_state(st)"
        )
        is True
    )


_R_ADAM = "o <- optimizer_adam(list(w = ag_param(matrix(1, 2, 2)))); fmt <- o$state()$format\n"


def test_optimizer_state_null_kind_or_type_counts_as_absent():
    """D14: {"kind": None, "params": []} was the legacy form in Python (the key is there), the
    ggmlR form in R (is.null); "type": None the other way round. A null is absent in both."""
    o = pg.optimizer_adam({"w": pg.ag_param(np.ones((2, 2)))})
    fmt = o.state()["format"]
    base = {"format": fmt, "t": 0, "accum_count": 0}
    same_refusal(lambda: o.load_state({**base, "kind": None, "params": []}),
                 "o$load_state(list(format = fmt, t = 0, accum_count = 0, kind = NULL, "
                 "params = list()))", pg.PyggmlrValueError,
                 "optimizer load_state(): unsupported state version NULL (this ggmlR reads "
                 "version 1)", setup=_R_ADAM)  # fmt: skip
    assert o.load_state({**base, "type": None, "kind": "adam", "params": [{}]}) is True
    assert (
        r.run(
            _R_ADAM + "o$load_state(list(format = fmt, t = 0, accum_count = 0, type = NULL, "
            "kind = 'adam', params = list(list())))"
        )
        is True
    )


def test_optimizer_state_slot_of_one_plain_vector_is_one_value():
    """D15: a slot given as one vector of numbers: Python one value, R one value per number."""
    o = pg.optimizer_adam([pg.ag_param(np.ones((2, 1)))])
    st = o.state()
    st["slots"] = {"m": np.array([0.5, 0.5]), "v": np.array([0.25, 0.25])}
    same_refusal(lambda: o.load_state(st),
                 "o$load_state(st)", pg.PyggmlrValueError,
                 "optimizer load_state(): slot 'm' of parameter 1 has shape 2, expected 2x1",
                 setup="o <- optimizer_adam(list(ag_param(matrix(1, 2, 1)))); st <- o$state()\n"
                 "st$slots <- list(m = c(0.5, 0.5), v = c(0.25, 0.25))\n")  # fmt: skip


def test_state_dict_buffers_through_a_holder_with_only_parameters():
    """D16: a container's layers = (batch_norm, holder with parameters() only): Python took the
    holder as a layer and returned the batch norm's buffers, R returned none."""
    bn = pg.ag_batch_norm(2)

    class Holder:
        def parameters(self):
            return {}

    class Container:
        layers = [bn, Holder()]

        def parameters(self):
            return bn.parameters()

    py = sorted(pg.ag_state_dict(Container())["buffers"])
    got = r.run(
        "bn <- ag_batch_norm(2); h <- new.env(); h$parameters <- function() list()\n"
        "m <- list(layers = list(bn, h), parameters = function() bn$parameters())\n"
        "sort(names(ag_state_dict(m)$buffers), method = 'radix')"
    )
    assert py == list(got) == ["layer1_running_mean", "layer1_running_var"]


def test_state_dict_refuses_parameters_returning_one_tensor():
    """D18: parameters() returning one tensor (no name to key it by): Python keyed it "1", R
    refused; refused in both (ag_save_model refuses it in both: every parameter needs a name)."""

    class One:
        def parameters(self):
            return pg.ag_param(np.ones((2, 2)))

    same_refusal(lambda: pg.ag_state_dict(One()),
                 "ag_state_dict(list(parameters = function() ag_param(matrix(1, 2, 2))))",
                 pg.ArgumentError,
                 "ag_state_dict(): parameters() returned a Tensor, not a list of ag_tensors",
                 "ag_state_dict(): parameters() returned a ag_tensor, not a list of ag_tensors")  # fmt: skip
