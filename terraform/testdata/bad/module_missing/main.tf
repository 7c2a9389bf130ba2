module "net" {
  source = "./nowhere"
}
