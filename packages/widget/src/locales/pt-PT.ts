import type { Messages } from "../messages.js"

/** Portuguese as written in Portugal, for Portugal, Lusophone Africa, East Timor and Macau (Brazil's is pt.ts). */
const messages: Messages = {
  tabPost: "Dar feedback",
  tabUpdates: "Novidades",
  tabs: "Feedback",
  formTitle: "Diga-nos do que precisa",
  board: "Quadro",
  loadingBoards: "A carregar quadros…",
  noBoards: "Ainda não existe nenhum quadro público.",
  boardsFailed: "Não foi possível carregar os quadros.",
  retry: "Tentar novamente",
  title: "Título",
  details: "Detalhes (opcional)",
  submit: "Enviar feedback",
  sending: "A enviar…",
  similar: { one: "Já existe uma publicação semelhante", many: "Já existem {count} de publicações semelhantes", other: "Já existem {count} publicações semelhantes" },
  newTab: "(abre num novo separador)",
  thanks: "Obrigado! O seu feedback «{title}» foi publicado.",
  sendMore: "Enviar mais feedback",
  pickBoard: "Escolha um quadro.",
  titleRequired: "Dê um título ao seu feedback.",
  fieldInvalid: "Verifique este campo.",
  loading: "A carregar…",
  nothingNew: "Ainda não há novidades.",
  updatesFailed: "Não foi possível carregar as novidades.",
  unreachable: "Não é possível aceder ao serviço de feedback a partir desta página.",
  busy: {
    one: "O serviço de feedback está sobrecarregado. Tente novamente dentro de {seconds} segundo.",
    many: "O serviço de feedback está sobrecarregado. Tente novamente dentro de {seconds} de segundos.",
    other: "O serviço de feedback está sobrecarregado. Tente novamente dentro de {seconds} segundos."
  },
  unauthorized: "Não foi possível confirmar a sua sessão. Atualize a página e tente novamente.",
  notFound: "Este quadro já não existe. Atualize a página e escolha outro.",
  checkForm: "Verifique o formulário.",
  failed: "Ocorreu um erro do nosso lado. Tente novamente.",
  launcher: "Feedback",
  charsLeft: { one: "Resta {count} caráter", many: "Restam {count} de carateres", other: "Restam {count} carateres" },
  tooLong: { one: "No máximo, {count} caráter.", many: "No máximo, {count} de carateres.", other: "No máximo, {count} carateres." },
  unavailable: "O feedback não está disponível nesta página.",
  viewPost: "Ver a sua publicação"
}
export default messages
