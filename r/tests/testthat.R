library(testthat)
library(pyggmlr)
test_check("pyggmlr")
