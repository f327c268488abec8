# ag_fit(sample_weight =, class_weight =): the arguments as doubles for the core, which checks the
# values, builds the plan's weight row and owns the weighted losses (native/fit_weight.c,
# native/fit_wloss.c; Python's pyggmlr/fit/weights.py converts the same way).

# sample_weight: a numeric vector (a one-row or one-column matrix too) as doubles, or NULL
.fit_sample_weight <- function(v) {
  if (is.null(v)) return(NULL)
  if (is_ag_tensor(v)) v <- v$data
  if (!is.numeric(v) || is.factor(v))  # Python's words
    .arg_fail("argument", "ag_fit: sample_weight must be numeric, got %s", class(v)[[1L]])
  .Call(R_pg_fit_weight_shape, v)
  as.double(v)  # NA kept: the core's "must be finite" names it as NA (pg_fmt_num)
}

# class_weight: list(ids, weights) for the core (ids NULL: 0-based class ids in order), or NULL.
# Names are mapped to class ids by the core (pg_fit_class_keys, Python's dict keys too): for a
# factor y its levels, else ids as in y ("0", "1", ...); the core then checks the ids (whole
# numbers, each once) and the weights (finite, >= 0).
.fit_class_weight <- function(v, y) {
  if (is.null(v)) return(NULL)
  if (!is.numeric(v) || is.factor(v) || length(dim(v)) > 1L)
    .arg_fail("argument", paste("ag_fit: class_weight must be a numeric vector named by class,",
                                "or of weights in class-id order, got %s"), .arg_show(v))
  w <- as.double(v)  # NA kept: the core's "must be finite" names its class, and NA (pg_fmt_num)
  if (is.null(names(v))) return(list(NULL, w))
  list(.Call(R_pg_fit_class_keys, enc2utf8(names(v)), if (is.factor(y)) levels(y)), w)
}
