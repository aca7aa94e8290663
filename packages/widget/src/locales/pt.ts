import type { Messages } from "../messages.js"

/** Portuguese as written in Brazil, for `pt` and any region but Portugal's (pt-PT.ts). */
const messages: Messages = {
  tabPost: "Dar feedback",
  tabUpdates: "Novidades",
  tabs: "Feedback",
  formTitle: "Conte-nos do que você precisa",
  board: "Quadro",
  loadingBoards: "Carregando quadros…",
  noBoards: "Ainda não há nenhum quadro público.",
  boardsFailed: "Não foi possível carregar os quadros.",
  retry: "Tentar novamente",
  title: "Título",
  details: "Detalhes (opcional)",
  submit: "Enviar feedback",
  sending: "Enviando…",
  similar: { one: "Já existe uma publicação semelhante", many: "Já existem {count} de publicações semelhantes", other: "Já existem {count} publicações semelhantes" },
  newTab: "(abre em uma nova aba)",
  thanks: "Obrigado! Seu feedback “{title}” foi publicado.",
  sendMore: "Enviar mais feedback",
  pickBoard: "Escolha um quadro.",
  titleRequired: "Dê um título ao seu feedback.",
  fieldInvalid: "Verifique este campo.",
  loading: "Carregando…",
  nothingNew: "Nenhuma novidade por enquanto.",
  updatesFailed: "Não foi possível carregar as novidades.",
  unreachable: "Não é possível acessar o serviço de feedback a partir desta página.",
  busy: { one: "O serviço de feedback está sobrecarregado. Tente novamente em {seconds} segundo.", many: "O serviço de feedback está sobrecarregado. Tente novamente em {seconds} de segundos.", other: "O serviço de feedback está sobrecarregado. Tente novamente em {seconds} segundos." },
  unauthorized: "Não foi possível verificar seu login. Recarregue a página e tente novamente.",
  notFound: "Este quadro não existe mais. Recarregue a página e escolha outro.",
  checkForm: "Verifique o formulário.",
  failed: "Algo deu errado do nosso lado. Tente novamente."
}
export default messages
