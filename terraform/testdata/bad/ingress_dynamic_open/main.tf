resource "aws_security_group" "db" {
  name = "db"

  dynamic "ingress" {
    for_each = [9160]
    content {
      from_port   = ingress.value
      to_port     = ingress.value
      protocol    = "tcp"
      cidr_blocks = ["0.0.0.0/0"]
    }
  }
}
