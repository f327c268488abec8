/* pyggmlr C core: ag_module_from_config's layer table (layer_config.c), once for R and Python.
 *
 * Which built-in layer types exist, the arguments each takes (kind, range, default) and the
 * texts of every refusal lived twice, in pyggmlr/nn.py and r/R/io_config.R, and drifted. The
 * core now checks one layer's config and hands back its arguments normalized; the front ends
 * walk the sequentials, map the type to their constructor and call the builders users
 * registered (user code stays in the host language). */

/* The kinds of a layer argument (the table in layer_config.c). */
enum pg_layer_arg_kind {
    PG_LAYER_ARG_SIZE = 0,   /* a whole number in [1, 2^31 - 1]: 4 and 4.0 both, as R reads them */
    PG_LAYER_ARG_NUMBER = 1, /* a finite number within the argument's range */
    PG_LAYER_ARG_FLAG = 2,   /* true or false */
    PG_LAYER_ARG_CHOICE = 3, /* one string of a list (some also take null) */
    PG_LAYER_ARG_DIMS = 4,   /* pooling sizes: a whole number >= lo, or a pair of them (2-D) */
    PG_LAYER_ARG_PAIR = 5,   /* a whole number >= lo, or a list of one or two (conv's (H, W));
                                some also take strings of a list (padding: "same", "valid") */
    PG_LAYER_ARG_SHAPE = 6,  /* null or a list of lo..hi whole numbers >= 1 (input_shape) */
    PG_LAYER_ARG_COUNT
};

/* The normalized arguments never need more bytes than this (NUL included): a few arguments,
 * each a number or a string from the table, so a caller's fixed buffer is always enough. */
enum { PG_LAYER_CONFIG_MAX = 512 };

/* One layer's config, text[0..len) (a JSON object such as {"type": "linear", "in_features": 4,
 * "out_features": 2}), checked against the built-in table before anything is built:
 * - depth: how many sequentials enclose it (0 at the top); beyond PG_CONFIG_MAX_DEPTH it is
 *   refused, so a config nested 5,000 levels is an error, not a stack overflow. A front end
 *   sends a sequential with its "layers" emptied ([]) and walks the layers itself.
 * - custom: the front end holds a builder registered for this type (ag_register_layer); such a
 *   type is the builder's to check and the call returns 0, writing nothing. A built-in type
 *   ignores the flag (registration refuses built-in names).
 * A built-in type's arguments are written to out[0..cap) as a JSON object with every argument
 * present in the table's order (defaults filled; sizes as integers; the older layer_norm
 * "num_features" as "normalized_shape"; "sequential": {}), for the front end to pass by name to
 * its constructor; returns that text's length (without the NUL; cap >= PG_LAYER_CONFIG_MAX
 * always fits). A bad config is PG_STATUS_ERR_VALUE, returned negated, with one text both
 * languages raise, e.g. "ag_module_from_config: unknown layer type 'conv' (built-in: ...)" or
 * "ag_module_from_config: bad arguments for a 'linear' layer: in_features must be a whole
 * number in [1, 2147483647], got 2.5". */
int64_t pg_layer_config(const char *text, int64_t len, int64_t depth, int custom, char *out,
                        int64_t cap);

/* The built-in types, in the order the unknown-type message lists them ("sequential" first):
 * ag_register_layer refuses these names. NULL past the end. */
const char *pg_layer_type_name(int i);

/* ag_register_layer's rules and texts, once for both front ends: type (NULL: not a single
 * string) a non-empty string, PG_STATUS_ERR_ARG "ag_register_layer: type must be a non-empty
 * string"; no built-in type, PG_STATUS_ERR_VALUE "ag_register_layer: 'linear' is a built-in
 * layer type"; builder_ok (the builder is a function), PG_STATUS_ERR_ARG "ag_register_layer:
 * builder must be a function (cfg -> layer)". */
int pg_layer_register_check(const char *type, int builder_ok);

/* The config API's refusals of a value of the wrong kind (shown: the language's name of its
 * type), always PG_STATUS_ERR_ARG. BUILT, what the builder registered for type returned:
 * "ag_module_from_config: the builder registered for 'x' returned a <shown>, not a layer with
 * forward()"; NO_CONFIG (type unused): "ag_to_config: the model has no to_config() (got
 * <shown>)". */
enum { PG_LAYER_BAD_BUILT = 0, PG_LAYER_BAD_NO_CONFIG = 1 };
int pg_layer_arg_fail(int what, const char *type, const char *shown);
