echo stop
