locals {
  script = templatefile("${path.module}/gone.tftpl", {})
  other  = file("boot.sh")
}
