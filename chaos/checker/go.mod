module kraftlog/checker

go 1.19
