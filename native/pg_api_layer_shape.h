/* pyggmlr C core: summary(model)'s output shapes and table (layer_shape.c), once for R and
 * Python.
 *
 * What each built-in layer does to the size of its input (rows; image layers' (C, H, W) by
 * torch's output-size formulas) lived in R alone and Python had no summary. The front ends
 * walk the sequentials, hand each layer's config (to_config / get_config, as
 * ag_module_to_config writes it) to the core and print the table the core lays out. */

/* The state flowing through the layers, int64_t[4]: rows (-1: unknown), then the image shape
 * C, H, W in torch order (C = -1: none or unknown; a 1-D signal (C, L) is (C, 1, L)). */
enum { PG_SHAPE_STATE = 4 };

/* One layer's config, text[0..len) (a JSON object {"type": ..., ...}), applied to state[4] in
 * place: the state after the layer. A built-in type's arguments are read as
 * ag_module_from_config reads them (pg_layer_config: defaults filled); a "sequential" with its
 * "layers" walks them in order. What the core cannot know gives rows -1 and no image: a custom
 * type, text that is not a config, a config the layer table refuses, a convolution with
 * neither an input image nor input_shape, a size torch would refuse (<= 0). Never fails on
 * the text: summary() prints for any model; PG_STATUS_ERR_ARG only for NULL pointers. */
int pg_layer_shape(const char *text, int64_t len, int64_t *state);

/* ag_fit's check of its input against one layer of the model, before training: as
 * pg_layer_shape (the state after the layer), but first, when state[0] (the rows the layer
 * gets) is known and text is a built-in layer that says what its forward takes (linear:
 * in_features; batch_norm / layer_norm / normalization: their size; multihead_attention:
 * d_model; lstm / gru / rnn: a multiple of input_size; a convolution with input_shape: its
 * C * H * W), rows it would refuse are PG_STATUS_ERR_SHAPE, the state left as it was. The text
 * names fn and the layer: index its 1-based position among the layers walked, x_rows the
 * model's input rows ("ag_fit: x has 5 rows but the model's first layer (linear) takes 4
 * inputs per sample; ..."; a later layer: "... layer 3 (linear) takes 7 inputs per sample but
 * the layers before it give 8 (x has 4 rows)"). x_cols: x's samples (-1: unknown); when they
 * are what the first layer takes, the text says x looks row-major and to pass tx (the
 * language's transpose, "x.T" / "t(x)"; NULL: no hint). The front ends call it only for their
 * own built-in layers (a custom one's config may claim a type its forward does not keep to). */
int pg_layer_shape_check(const char *fn, int64_t index, int64_t x_rows, int64_t x_cols,
                         const char *tx, const char *text, int64_t len, int64_t *state);

/* The output-shape label of state[4]: "?" (rows unknown), "[10 x batch]", or with the image
 * shape "[1024 x batch] (16, 8, 8)". As pg_fit_history_format: at most cap bytes (NUL
 * included) to buf, NULL to measure; returns the length the whole text needs, or -status. */
int64_t pg_layer_shape_label(const int64_t *state, char *buf, int64_t cap);

/* The whole summary table as both languages print it: the title, a rule of "_", the header
 * "Layer (type)  Output shape  Param #", a rule of "=", one row per layer ("<i> <layer>
 * (<type>)", the shape label, the parameter count right-aligned with thousands separators),
 * a rule of "=", then "Total params: " (trainable + non_trainable), "Trainable params: ",
 * "Non-trainable params: ". Columns are as wide as their widest cell (UTF-8 characters), two
 * spaces apart; lines end in "\n". layer, type, shape: n UTF-8 strings each; params: n counts.
 * As pg_fit_history_format: at most cap bytes to buf, NULL to measure; returns the length the
 * whole text needs, or -status (PG_STATUS_ERR_ARG for NULL strings or n < 0). */
int64_t pg_summary_text(const char *title, int64_t n, const char *const *layer,
                        const char *const *type, const char *const *shape, const double *params,
                        double trainable, double non_trainable, char *buf, int64_t cap);

/* A built-in layer printed alone, as both languages print it (Python's repr, R's print):
 * "ag_<kind>: <name> (<params> parameters, <train|eval> mode)"; training < 0: a layer without
 * a mode (ag_linear: R's is a list) ends "(<params> parameters)". name is the label the
 * sequential's print and the summary table use (the layer's name: "gru(1, 32)"); params a
 * plain count, "3360". As pg_fit_history_format: at most cap bytes (NUL included) to buf, NULL
 * to measure; returns the length the whole text needs, or -status (PG_STATUS_ERR_ARG for NULL
 * strings). */
int64_t pg_layer_print_text(const char *kind, const char *name, double params, int training,
                            char *buf, int64_t cap);
