module mixp.dev/go-service

go 1.19
