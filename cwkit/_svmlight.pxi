# svmlight/libsvm tokenizer (issue 3)
